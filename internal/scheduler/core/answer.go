package core

import "time"

// EvictionAnswerWait is how long the controllers that react to an eviction
// may wait for the scheduler's answer to it (the replacement's placement, or
// no cluster that fits) so that one write says both: the binding-status
// controller's PlacementHealthy condition and the graceful-eviction
// controller's history entry. After it they write without the answer. It
// bounds a delay of status only; no eviction or deletion waits on it.
const EvictionAnswerWait = 10 * time.Second
