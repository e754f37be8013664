package plan

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"

	"poolc.dev/poolc/pools"
)

// cycle returns the IDs of a dependency cycle, or nil when the steps form
// a DAG.
func (b *builder) cycle() []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		state[id] = open
		stack = append(stack, id)
		for _, dep := range b.byID[id].DependsOn {
			switch state[dep] {
			case open:
				i := slices.Index(stack, dep)
				found = slices.Clone(stack[i:])
				return true
			case unseen:
				if visit(dep) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = done
		return false
	}
	for _, s := range b.steps {
		if state[s.ID] == unseen && visit(s.ID) {
			return found
		}
	}
	return nil
}

// moveIn picks, among the make-before-break edges of a cycle, the lane to
// break first: the one whose name sorts first.
func (b *builder) moveIn(cycle []string) string {
	best := ""
	for _, id := range cycle {
		if lane, ok := b.makeBeforeBreak[id]; ok && (best == "" || lane < best) {
			best = lane
		}
	}
	return best
}

// finish orders the steps (a topological order, ties broken by kind and
// ID so equal inputs give byte-equal plans) and computes the fleet after.
func (b *builder) finish() (*pools.Plan, error) {
	for _, s := range b.steps {
		for _, dep := range s.DependsOn {
			if b.byID[dep] == nil {
				return nil, fmt.Errorf("plan: step %s depends on unknown step %s", s.ID, dep)
			}
		}
		sort.Strings(s.DependsOn)
	}
	waiting := make(map[string]int, len(b.steps))
	dependents := make(map[string][]string, len(b.steps))
	for _, s := range b.steps {
		waiting[s.ID] = len(s.DependsOn)
		for _, dep := range s.DependsOn {
			dependents[dep] = append(dependents[dep], s.ID)
		}
	}
	rank := map[pools.StepKind]int{}
	for i, k := range pools.StepKinds {
		rank[k] = i
	}
	ready := &readyQueue{rank: rank}
	for _, s := range b.steps {
		if waiting[s.ID] == 0 {
			heap.Push(ready, s)
		}
	}
	plan := &pools.Plan{
		FormatVersion: pools.PlanFormatVersion, Pool: b.in.Pool.Name, Profile: b.in.Profile,
		PlannedAt: b.in.Now.UTC(), Steps: make([]pools.Step, 0, len(b.steps)),
		Interruptions: b.meanwhile.interruptions, Unplaced: b.in.Placement.Unplaced, Unserved: b.in.Placement.Unserved,
	}
	for ready.Len() > 0 {
		s := heap.Pop(ready).(*pools.Step)
		plan.Steps = append(plan.Steps, *s)
		for _, next := range dependents[s.ID] {
			if waiting[next]--; waiting[next] == 0 {
				heap.Push(ready, b.byID[next])
			}
		}
	}
	if len(plan.Steps) != len(b.steps) {
		return nil, fmt.Errorf("plan: steps form a cycle")
	}
	// Before is the fleet as given (routes without a port stay so); After
	// is the fleet as the planner read it, every route naming its port,
	// with the steps applied, so two plans' routes compare. Both have the
	// state's shape: what the refresh saw of the members' images is in the
	// image-sync steps, not in them.
	plan.Before = b.in.Current.Clone()
	plan.Before.Images = nil
	after := b.cur.Clone()
	after.Images = nil
	if err := after.ApplyAll(plan.Steps); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	after.Nodes = slices.Clone(b.des.Nodes)
	after.Normalize()
	plan.After = after
	if plan.Interruptions == nil {
		plan.Interruptions = []pools.Interruption{}
	}
	if plan.Unplaced == nil {
		plan.Unplaced = []pools.Unplaced{}
	}
	if plan.Unserved == nil {
		plan.Unserved = []pools.Unserved{}
	}
	return plan, nil
}

// readyQueue holds the steps whose dependencies are done, the next to
// take first: by kind in summary order, then by ID. Each step's rank is
// looked up once, as it is pushed.
type readyQueue struct {
	rank  map[pools.StepKind]int
	steps []rankedStep
}

// rankedStep is a step and the rank of its kind.
type rankedStep struct {
	rank int
	step *pools.Step
}

func (q *readyQueue) Len() int { return len(q.steps) }
func (q *readyQueue) Less(i, j int) bool {
	a, c := q.steps[i], q.steps[j]
	if a.rank != c.rank {
		return a.rank < c.rank
	}
	return a.step.ID < c.step.ID
}
func (q *readyQueue) Swap(i, j int) { q.steps[i], q.steps[j] = q.steps[j], q.steps[i] }
func (q *readyQueue) Push(x any) {
	s := x.(*pools.Step)
	q.steps = append(q.steps, rankedStep{rank: q.rank[s.Kind], step: s})
}
func (q *readyQueue) Pop() any {
	last := q.steps[len(q.steps)-1]
	q.steps = q.steps[:len(q.steps)-1]
	return last.step
}
