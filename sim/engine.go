package sim

import (
	"container/heap"
	"time"
)

// evKind says what an event does when its time comes.
type evKind uint8

// The kinds of events. a and b carry what each needs (see dispatch).
const (
	evArrival       evKind = iota // a: demand source
	evServiceDone                 // a: instance, b: its epoch
	evLoadDone                    // a: instance, b: its epoch
	evConnectFailed               // a: request, b: its generation
	evColdTimeout                 // a: request, b: its generation
	evScenario                    // a: index of the scenario event
	evFaultEnd                    // a: node, b: its fault generation
	evTick                        // the controller's tick
	evStepDone                    // a: execution, b: step index, c: attempt
	evStepTimeout                 // a: execution, b: step index, c: attempt
	evStepWake                    // a: execution
)

// event is one thing scheduled to happen. Events are ordered by time,
// then by the order they were scheduled in, so a run is deterministic.
type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	a    int32
	b, c uint32
}

// eventHeap is the queue of pending events, a min-heap on (at, seq).
// The clock adds and takes events with heap.Fix rather than heap.Push and
// heap.Pop, which would box every event in an interface value; Push and
// Pop complete heap.Interface.
type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// clock is the virtual clock and the events waiting for it.
type clock struct {
	now    time.Duration
	seq    uint64
	queue  eventHeap
	events int
}

// at schedules an event of kind at time t (never before now).
func (c *clock) at(t time.Duration, kind evKind, a int32, b uint32) {
	c.push(event{at: t, kind: kind, a: a, b: b})
}

// atStep schedules an event of kind for an attempt of a plan step at
// time t (never before now).
func (c *clock) atStep(t time.Duration, kind evKind, ref stepRef) {
	c.push(event{at: t, kind: kind, a: ref.exec, b: ref.step, c: ref.attempt})
}

func (c *clock) push(e event) {
	c.seq++
	e.at, e.seq = max(e.at, c.now), c.seq
	c.queue = append(c.queue, e)
	heap.Fix(&c.queue, len(c.queue)-1)
}

// next takes the earliest event and moves the clock to it.
func (c *clock) next() (event, bool) {
	n := len(c.queue) - 1
	if n < 0 {
		return event{}, false
	}
	e := c.queue[0]
	c.queue[0] = c.queue[n]
	c.queue = c.queue[:n]
	if n > 0 {
		heap.Fix(&c.queue, 0)
	}
	c.now = e.at
	c.events++
	return e, true
}

// secs converts seconds to a duration.
func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
