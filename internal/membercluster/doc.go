package membercluster

// The package comment is in config.go. In short: the cache (cache.go) owns,
// per member cluster, the client configuration (ConfigFor), a dynamic client,
// a lazy RESTMapper and one informer per resource in use, restricted to
// objects labelled karmada.io/managed=true; controllers register handlers
// with Watch. Its connection controller (controller.go) reconnects members
// whose Cluster endpoint or credentials change and tears down deleted ones.
// It writes no object field.
