package haproxy

import (
	"reflect"
	"testing"
)

// TestTheLiveServersOfALaneNoAliasRoutesToAreObserved: the server of a
// lane the aliases only fall back to (or one left behind by a lane that
// went) is observed under the lane's server route key, so that the plan
// sees where the gateway sends it; servers of routed backends, of an
// alias's own lane, of the cloud and in maintenance are not.
func TestTheLiveServersOfALaneNoAliasRoutesToAreObserved(t *testing.T) {
	routes := map[string]string{"ask": "lane_chat"}
	srvs := []Server{
		{Backend: "lane_chat", Name: "s1", Addr: "127.0.0.2", Port: 8080, Op: 2},
		{Backend: "lane_embed", Name: "s1", Addr: "127.0.0.4", Port: 8081, Op: 2},
		{Backend: "lane_embed", Name: "s2", Addr: "127.0.0.1", Port: 1, Admin: adminMaint},
		{Backend: "lane_gone", Name: "s1", Addr: "127.0.0.3", Port: 8082, Admin: adminDrain, Op: 2},
		{Backend: "lane_idle", Name: "s1", Addr: "127.0.0.1", Port: 1, Admin: adminMaint | 0x04},
		{Backend: Cloud, Name: "s1", Addr: "203.0.113.1", Port: 443, Op: 2},
	}
	// lane_down is the own lane of alias spare, routed elsewhere now: its
	// server waits for the lane's return.
	srvs = append(srvs, Server{Backend: "lane_down", Name: "s1", Addr: "127.0.0.2", Port: 8083, Op: 2})
	aliases := []AliasRoute{{Alias: "ask", Lane: "chat", Fallbacks: []string{"embed"}}, {Alias: "spare", Lane: "down", Fallbacks: []string{"chat"}}}
	got := laneServers(routes, aliases, srvs, map[string]string{"127.0.0.4:8081": "n3"})
	want := []Observed{
		{Alias: "~embed", Lane: "embed", Endpoints: []Endpoint{{Lane: "embed", Node: "n3", Addr: "127.0.0.4", Port: 8081}}},
		{Alias: "~gone", Lane: "gone", Draining: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lane servers %+v, want %+v", got, want)
	}
}
