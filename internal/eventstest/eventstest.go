// Package eventstest holds test helpers for Events recorded with
// client-go's fake recorders (record.FakeRecorder, events.FakeRecorder).
package eventstest

import "k8s.io/client-go/tools/record"

// Drain returns the events rec holds, oldest first, and empties it.
func Drain(rec *record.FakeRecorder) []string {
	return DrainChan(rec.Events)
}

// DrainChan returns the events a fake recorder's channel holds (that of an
// events.FakeRecorder, say), oldest first, and empties it.
func DrainChan(events chan string) []string {
	var out []string
	for {
		select {
		case ev := <-events:
			out = append(out, ev)
		default:
			return out
		}
	}
}
