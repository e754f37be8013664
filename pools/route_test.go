package pools_test

import (
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

// crossing is a state in the middle of lane chat's residency change from
// keep-warm to on-demand: its own process and its model in node a's
// router both run under port 8080, and the route says which it reaches.
func crossing(router bool) string {
	r := ""
	if router {
		r = `,"router":true`
	}
	return `{"format_version":1,"lanes":[
		{"name":"chat","node":"a","port":8080,"residency":"on-demand","memory_gb":30,"loaded":false},
		{"name":"chat","node":"a","port":8080,"residency":"keep-warm","memory_gb":30,"loaded":true}],
	"routes":[{"alias":"ask","lane":"chat","node":"a","port":8080` + r + `}]}`
}

// TestARouteNamesTheProcessItReaches: while a lane's residency crosses
// on-demand the state holds its own process and its router's model under
// one node and port, and the route reaches the one it names; Serves
// returns that one, not the first of the lane on the node.
func TestARouteNamesTheProcessItReaches(t *testing.T) {
	for _, router := range []bool{false, true} {
		s, err := pools.ParseState("state.json", []byte(crossing(router)))
		if err != nil {
			t.Fatalf("router=%v: %v", router, err)
		}
		if len(s.Lanes) != 2 {
			t.Fatalf("router=%v: lanes %+v; want both processes of chat", router, s.Lanes)
		}
		r := *s.Route("ask")
		if r.Router != router {
			t.Errorf("router=%v: the route reads as %+v", router, r)
		}
		l := s.Serves(r)
		if l == nil || (l.Residency == pools.OnDemand) != router {
			t.Errorf("router=%v: the route reaches %+v", router, l)
		}
		for _, p := range s.Lanes {
			if r.Reaches(p) != ((p.Residency == pools.OnDemand) == router) {
				t.Errorf("router=%v: Reaches(%s) is %v", router, p.Residency, r.Reaches(p))
			}
		}
	}
}

// TestAStateHoldsARouteToAProcessThatIsGone: the gateway still sends an
// alias to a lane whose process died (killed by hand, the walk's seed 5
// change 17): the state a refresh writes holds that route without the
// process, and reads back (it was refused: "alias chat routes to lane
// cognition on node n2, which the state does not hold", and every later
// command failed on it).
func TestAStateHoldsARouteToAProcessThatIsGone(t *testing.T) {
	doc := `{"format_version":1,"lanes":[{"name":"notes","node":"a","port":8081,"residency":"keep-warm"}],
		"routes":[{"alias":"chat","lane":"cognition","node":"b","port":8080},{"alias":"notes","lane":"notes","node":"a","port":8081}]}`
	s, err := pools.ParseState("state.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Route("chat"); r == nil || r.Lane != "cognition" || r.Node != "b" || s.Serves(*r) != nil {
		t.Fatalf("route chat %+v", r)
	}
}

// TestAStateRefusesALaneTwice: a lane twice as the same kind of process
// on one node and port is refused.
func TestAStateRefusesALaneTwice(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"format_version":1,"lanes":[
			{"name":"chat","node":"a","port":8080,"residency":"keep-warm"},
			{"name":"chat","node":"a","port":8080,"residency":"preferred"}]}`,
			`lane "chat" appears twice on node "a" port 8080 as a process of its own`},
		{`{"format_version":1,"lanes":[
			{"name":"chat","node":"a","port":8080,"residency":"on-demand"},
			{"name":"chat","node":"a","port":8080,"residency":"on-demand"}]}`,
			`lane "chat" appears twice on node "a" port 8080 as a model of the router`},
	} {
		_, err := pools.ParseState("state.json", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want %q", c.doc, err, c.want)
		}
	}
}

// TestARouteWrittenBeforeRoutesNamedTheRouterReadsThroughIt: a state
// whose route to an on-demand lane says nothing of the router (written
// before routes did) reads as reaching the lane through its router, the
// only way it runs; a route to the lane's own process stays as it is.
func TestARouteWrittenBeforeRoutesNamedTheRouterReadsThroughIt(t *testing.T) {
	for residency, router := range map[string]bool{"on-demand": true, "keep-warm": false} {
		for _, port := range []string{"", `,"port":8080`} {
			doc := `{"format_version":1,"lanes":[{"name":"chat","node":"a","port":8080,"residency":"` + residency + `"}],
				"routes":[{"alias":"ask","lane":"chat","node":"a"` + port + `}]}`
			s, err := pools.ParseState("state.json", []byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			if r := s.Route("ask"); r.Router != router || s.Serves(*r) == nil {
				t.Errorf("%s: the route reads as %+v, reaching %+v", doc, r, s.Serves(*r))
			}
		}
	}
}
