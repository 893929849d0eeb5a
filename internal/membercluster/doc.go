package membercluster

// The package comment is in config.go. In short: the cache (cache.go) owns,
// per member cluster, the client configuration (ConfigFor), a dynamic client,
// a lazy RESTMapper and one informer per resource in use, restricted to
// objects labelled karmada.io/managed=true; controllers register handlers
// with Watch. Its connection controller (controller.go) reconnects members
// whose Cluster endpoint or credentials change or whose Cluster became Ready
// again after an outage (fresh informers list at once instead of waiting out
// client-go's back-off), and tears down deleted ones. A member that stopped
// answering is left alone for a growing back-off, which ends early once its
// Cluster is Ready again. It writes no object field.
