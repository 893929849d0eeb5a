// Package orphans removes what Lifeboat left in member clusters without an
// owner: objects whose Work is gone (after `lifeboat unjoin` of a member that
// was down, a Work released while its member did not answer), and the
// namespaces the execution controller created that nothing uses any more.
// It never removes anything Lifeboat did not put there.
//
// Two rules, both pure functions with table tests:
//
//   - the orphan rule (Judge): an object labelled karmada.io/managed=true
//     that names a Work in karmada-es-<cluster> which does not exist, that
//     field manager "lifeboat" wrote, that names a binding, and whose
//     binding does not place it on the cluster, is an orphan. Namespaces and
//     CustomResourceDefinitions never are (deleting them deletes what others
//     keep in them). An orphan is removed only once two scans at least
//     --member-orphan-grace apart found it so (Sightings: time for the
//     scheduler and the binding controller to make the Work that adopts it
//     after a join), and only if, read again from the API server right
//     before the delete, its Work is still missing and its binding still
//     does not place it; the delete is conditional on the object's UID and
//     resourceVersion.
//   - the namespace rule (NamespaceGate, JudgeContents): a namespace is
//     removed only if it carries execution.CreatedNamespaceAnnotation (the
//     execution controller created it), no Work of the cluster puts an
//     object in it, and it holds nothing but what every namespace holds
//     (Events, kube-root-ca.crt, the default ServiceAccount and its
//     tokens). An object of anyone else keeps it; objects on their way out
//     (being deleted, dependents of deleted owners) are waited for.
//
// ObjectReconciler (controller "member-orphans") scans a member when its
// Cluster is created, whenever it becomes Ready, and every
// --member-orphan-scan-interval (up to a tenth longer, at random). A kind
// an informer of the controller manager holds is settled from it when every
// object there is owned; any other kind, or one with an object the rule
// must look at, is listed from the member's API server.
// NamespaceReconciler (controller
// "member-namespaces") checks a namespace when a Work that used it is
// deleted, and for every namespace Lifeboat created that a scan finds.
//
// Writes: member objects (deleted, per the orphan rule), member namespaces
// (deleted, per the namespace rule); Events on Clusters (OrphansFound,
// OrphansKept, OrphansRemoved, NamespaceRemoved). Metrics:
// lifeboat_member_orphans{cluster,verdict},
// lifeboat_member_orphans_removed_total{cluster},
// lifeboat_member_namespaces_removed_total{cluster}.
//
// Sweeper holds the I/O of both rules over a Member, so that `lifeboat
// unjoin --cleanup-member` applies the same rules to a member whose Cluster
// is gone (no Work can be made for it then, so no grace period applies).
package orphans
