// Package eventstest holds test helpers for Events recorded with
// client-go's record.FakeRecorder.
package eventstest

import "k8s.io/client-go/tools/record"

// Drain returns the events rec holds, oldest first, and empties it.
func Drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case ev := <-rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}
