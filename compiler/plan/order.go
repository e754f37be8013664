package plan

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"strings"

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

// order orders the steps in a topological order, ties broken by kind (in
// summary order) and ID so that equal inputs give byte-equal plans, and
// reports false when they form a cycle (see cycle). Each step's place in
// the order of ties is found once, by one sort, so the queue of the steps
// ready compares integers.
func (b *builder) order() ([]pools.Step, bool, error) {
	index := make(map[string]int32, len(b.steps))
	for i, s := range b.steps {
		index[s.ID] = int32(i)
	}
	// The steps that depend on step j are dependents[first[j]:first[j+1]].
	waiting := make([]int, len(b.steps))
	first := make([]int32, len(b.steps)+1)
	for i, s := range b.steps {
		sort.Strings(s.DependsOn)
		for _, dep := range s.DependsOn {
			j, ok := index[dep]
			if !ok {
				return nil, false, fmt.Errorf("plan: step %s depends on unknown step %s", s.ID, dep)
			}
			first[j+1]++
		}
		waiting[i] = len(s.DependsOn)
	}
	for j := range b.steps {
		first[j+1] += first[j]
	}
	dependents := make([]int32, first[len(b.steps)])
	filled := slices.Clone(first[:len(b.steps)])
	for i, s := range b.steps {
		for _, dep := range s.DependsOn {
			j := index[dep]
			dependents[filled[j]] = int32(i)
			filled[j]++
		}
	}
	rankOf := map[pools.StepKind]int{}
	for i, k := range pools.StepKinds {
		rankOf[k] = i
	}
	rank := make([]int, len(b.steps))   // each step's kind's place in summary order
	ties := make([]int32, len(b.steps)) // the steps by kind, then ID
	for i, s := range b.steps {
		rank[i], ties[i] = rankOf[s.Kind], int32(i)
	}
	slices.SortFunc(ties, func(x, y int32) int {
		if r := cmp.Compare(rank[x], rank[y]); r != 0 {
			return r
		}
		return strings.Compare(b.steps[x].ID, b.steps[y].ID)
	})
	place := make([]int32, len(b.steps)) // each step's place in ties
	for k, i := range ties {
		place[i] = int32(k)
	}
	ready := &readyQueue{}
	for i := range b.steps {
		if waiting[i] == 0 {
			heap.Push(ready, place[i])
		}
	}
	steps := make([]pools.Step, 0, len(b.steps))
	for ready.Len() > 0 {
		i := ties[heap.Pop(ready).(int32)]
		steps = append(steps, *b.steps[i])
		for _, next := range dependents[first[i]:first[i+1]] {
			if waiting[next]--; waiting[next] == 0 {
				heap.Push(ready, place[next])
			}
		}
	}
	return steps, len(steps) == len(b.steps), nil
}

// finish makes the plan of the ordered steps and computes the fleet after.
func (b *builder) finish(steps []pools.Step) (*pools.Plan, error) {
	plan := &pools.Plan{
		FormatVersion: pools.PlanFormatVersion, Pool: b.in.Pool.Name, Profile: b.in.Profile,
		PlannedAt: b.in.Now.UTC(), Steps: steps,
		Interruptions: b.meanwhile.interruptions, Unplaced: b.in.Placement.Unplaced, Unserved: b.in.Placement.Unserved,
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

// readyQueue holds the steps whose dependencies are done, by their place
// in the order of ties: the least is taken first.
type readyQueue []int32

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i] < q[j] }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(int32)) }
func (q *readyQueue) Pop() any {
	last := (*q)[len(*q)-1]
	*q = (*q)[:len(*q)-1]
	return last
}
