// Package undecodable keeps the controller manager working when an object of
// Lifeboat's own API groups is stored but cannot be decoded into its Go type
// (a PropagationPolicy whose spec.priority is past int32, written before the
// schema bounded it): that object is left out of the informers and reported,
// and every other object still reaches the caches and the controllers.
// Without it, one such object fails the LIST of its whole kind, and the
// informer of that kind never syncs again.
//
// Two layers, because the problem sits below the one place that can decide:
//
//   - The transport (Guard.WrapTransport, on the manager's rest.Config) sees
//     the bytes. For the list and watch requests the informers below mark, it
//     decodes each item of a JSON list and each object of a JSON watch event
//     into its Go type, as the client will; an object that fails is replaced
//     by a stand-in: its apiVersion, kind and metadata only, with the decode
//     error in an annotation of its own. Watch responses stay
//     streams: one event is read, checked and handed on at a time. Any other
//     request (direct reads, other groups, protobuf, metadata-only or table
//     responses, errors) passes untouched, so a direct read of a bad object
//     fails as before instead of quietly missing it.
//   - The informer (Guard.NewInformer, the manager cache's NewInformer) sees
//     the stand-ins next to its own store, which holds the last version of
//     each object the controllers could read, and decides (see decide): a
//     stand-in never reaches the store; an object that becomes undecodable
//     keeps its last good version, through watch events and relists alike;
//     a new undecodable object is not seen; a deletion is delivered with the
//     last good version, and so is the start of one, so finalizers run.
//
// A lenient codec was the other candidate, but controller-runtime builds its
// clients' codecs from the scheme with no hook to replace them, and a codec
// cannot see the informer's store to keep the last good version. A
// ListerWatcher of its own would have to repeat controller-runtime's
// namespace and selector handling.
//
// Every skipped object is reported, at most once per ReportInterval while it
// stays the same: an error log line "object cannot be decoded; skipped" with
// group, kind, namespace, name and the decode error, a Warning Event
// DecodeFailed on the object, and the gauge lifeboat_undecodable_objects
// {group,kind}.
package undecodable
