package sdk

import (
	"slices"

	pb "poolc.dev/poolc/plugins/proto/actuatorv3"
)

// The conversion between the SDK's types and the protocol's messages, both
// ways, in one file: each message has exactly one pair of functions.

func nodeToProto(n Node) *pb.Node {
	return &pb.Node{Name: n.Name, Address: n.Address, SshUser: n.SSHUser, SshPort: int32(n.SSHPort),
		KubeContext: n.KubeContext, MemoryGb: n.MemoryGB, BudgetGb: n.BudgetGB, Labels: n.Labels}
}

func nodeFromProto(n *pb.Node) Node {
	return Node{Name: n.GetName(), Address: n.GetAddress(), SSHUser: n.GetSshUser(), SSHPort: int(n.GetSshPort()),
		KubeContext: n.GetKubeContext(), MemoryGB: n.GetMemoryGb(), BudgetGB: n.GetBudgetGb(), Labels: n.GetLabels()}
}

func modelToProto(m Model) *pb.Model {
	return &pb.Model{Name: m.Name, Path: m.Path, Source: m.Source, Sha256: m.SHA256, SizeGb: m.SizeGB, MemoryGb: m.MemoryGB, Args: m.Args}
}

func modelFromProto(m *pb.Model) Model {
	return Model{Name: m.GetName(), Path: m.GetPath(), Source: m.GetSource(), SHA256: m.GetSha256(),
		SizeGB: m.GetSizeGb(), MemoryGB: m.GetMemoryGb(), Args: m.GetArgs()}
}

func laneToProto(l Lane) *pb.Lane {
	out := &pb.Lane{Name: l.Name, Node: nodeToProto(l.Node), Model: modelToProto(l.Model), Port: int32(l.Port),
		Aliases: l.Aliases, Residency: l.Residency, Loaded: l.Loaded}
	if p := l.Process; p != nil {
		out.Process = &pb.LaneProcess{Pid: int64(p.PID), CommandLine: p.CommandLine, ResidentBytes: p.ResidentBytes}
	}
	return out
}

func laneFromProto(l *pb.Lane) Lane {
	out := Lane{Name: l.GetName(), Node: nodeFromProto(l.GetNode()), Model: modelFromProto(l.GetModel()), Port: int(l.GetPort()),
		Aliases: l.GetAliases(), Residency: l.GetResidency(), Loaded: l.GetLoaded()}
	if p := l.GetProcess(); p != nil {
		out.Process = &LaneProcess{PID: int(p.GetPid()), CommandLine: p.GetCommandLine(), ResidentBytes: p.GetResidentBytes()}
	}
	return out
}

func endpointToProto(e *LaneEndpoint) *pb.LaneEndpoint {
	if e == nil {
		return nil
	}
	return &pb.LaneEndpoint{Lane: e.Lane, Node: e.Node, Address: e.Address, Port: int32(e.Port), Router: e.Router}
}

func endpointFromProto(e *pb.LaneEndpoint) *LaneEndpoint {
	if e == nil {
		return nil
	}
	return &LaneEndpoint{Lane: e.GetLane(), Node: e.GetNode(), Address: e.GetAddress(), Port: int(e.GetPort()), Router: e.GetRouter()}
}

func memberToProto(m Member) *pb.Member {
	return &pb.Member{PodPool: m.PodPool, Context: m.Context, Priority: int32(m.Priority), SshHost: m.SSHHost, SshPort: int32(m.SSHPort),
		Capacity: int32(m.Capacity), Registry: m.Registry, Namespace: m.Namespace, PodMemoryGb: m.PodMemoryGB, Image: m.Image}
}

func memberFromProto(m *pb.Member) Member {
	return Member{PodPool: m.GetPodPool(), Context: m.GetContext(), Priority: int(m.GetPriority()), SSHHost: m.GetSshHost(), SSHPort: int(m.GetSshPort()),
		Capacity: int(m.GetCapacity()), Registry: m.GetRegistry(), Namespace: m.GetNamespace(), PodMemoryGB: m.GetPodMemoryGb(), Image: m.GetImage()}
}

func stepToProto(s Step) *pb.Step {
	out := &pb.Step{Id: s.ID, Kind: string(s.Kind), Target: s.Target, Reason: s.Reason}
	switch {
	case s.Lane != nil:
		out.Detail = &pb.Step_Lane{Lane: &pb.LaneStep{Lane: laneToProto(*s.Lane), From: s.From}}
	case s.Route != nil:
		out.Detail = &pb.Step_Route{Route: &pb.RouteStep{Alias: s.Route.Alias, From: endpointToProto(s.Route.From), To: endpointToProto(s.Route.To)}}
	case s.Prefetch != nil:
		out.Detail = &pb.Step_Prefetch{Prefetch: &pb.PrefetchStep{Node: nodeToProto(s.Prefetch.Node), Model: modelToProto(s.Prefetch.Model)}}
	case s.Member != nil:
		out.Detail = &pb.Step_Member{Member: &pb.MemberStep{Member: memberToProto(*s.Member)}}
	case s.ImageSync != nil:
		out.Detail = &pb.Step_ImageSync{ImageSync: &pb.ImageSyncStep{Member: memberToProto(s.ImageSync.Member), Image: s.ImageSync.Image, Digest: s.ImageSync.Digest}}
	}
	return out
}

func stepFromProto(s *pb.Step) Step {
	out := Step{ID: s.GetId(), Kind: StepKind(s.GetKind()), Target: s.GetTarget(), Reason: s.GetReason()}
	switch d := s.GetDetail().(type) {
	case *pb.Step_Lane:
		l := laneFromProto(d.Lane.GetLane())
		out.Lane, out.From = &l, d.Lane.GetFrom()
	case *pb.Step_Route:
		out.Route = &RouteChange{Alias: d.Route.GetAlias(), From: endpointFromProto(d.Route.GetFrom()), To: endpointFromProto(d.Route.GetTo())}
	case *pb.Step_Prefetch:
		out.Prefetch = &Prefetch{Node: nodeFromProto(d.Prefetch.GetNode()), Model: modelFromProto(d.Prefetch.GetModel())}
	case *pb.Step_Member:
		m := memberFromProto(d.Member.GetMember())
		out.Member = &m
	case *pb.Step_ImageSync:
		out.ImageSync = &ImageSync{Member: memberFromProto(d.ImageSync.GetMember()), Image: d.ImageSync.GetImage(), Digest: d.ImageSync.GetDigest()}
	}
	return out
}

func fleetToProto(f *Fleet) *pb.Fleet {
	if f == nil {
		return nil
	}
	out := &pb.Fleet{}
	for _, n := range f.Nodes {
		out.Nodes = append(out.Nodes, &pb.NodeStatus{Name: n.Name, MemoryTotalGb: n.MemoryTotalGB, MemoryFreeGb: n.MemoryFreeGB})
	}
	for _, l := range f.Lanes {
		out.Lanes = append(out.Lanes, laneToProto(l))
	}
	for _, r := range f.Routes {
		out.Routes = append(out.Routes, &pb.Route{Alias: r.Alias, Lane: endpointToProto(&r.Lane)})
	}
	for _, p := range f.Prefetched {
		out.Prefetched = append(out.Prefetched, &pb.Prefetched{Node: p.Node, Model: modelToProto(p.Model)})
	}
	for _, m := range f.Members {
		out.Members = append(out.Members, memberToProto(m))
	}
	for _, i := range f.Images {
		out.Images = append(out.Images, &pb.MemberImage{PodPool: i.PodPool, Context: i.Context, Image: i.Image, Digest: i.Digest, MissingBytes: i.MissingBytes})
	}
	for _, u := range f.Unobserved {
		out.Unobserved = append(out.Unobserved, &pb.Unobserved{Kind: string(u.Kind), Name: u.Name, PodPool: u.PodPool, Context: u.Context,
			Cause: pb.Cause(max(0, slices.Index(Causes(), u.Cause))), Detail: u.Detail})
	}
	return out
}

func fleetFromProto(f *pb.Fleet) *Fleet {
	if f == nil {
		return nil
	}
	out := &Fleet{}
	for _, n := range f.GetNodes() {
		out.Nodes = append(out.Nodes, NodeStatus{Name: n.GetName(), MemoryTotalGB: n.GetMemoryTotalGb(), MemoryFreeGB: n.GetMemoryFreeGb()})
	}
	for _, l := range f.GetLanes() {
		out.Lanes = append(out.Lanes, laneFromProto(l))
	}
	for _, r := range f.GetRoutes() {
		lane := LaneEndpoint{}
		if e := endpointFromProto(r.GetLane()); e != nil {
			lane = *e
		}
		out.Routes = append(out.Routes, Route{Alias: r.GetAlias(), Lane: lane})
	}
	for _, p := range f.GetPrefetched() {
		out.Prefetched = append(out.Prefetched, Prefetched{Node: p.GetNode(), Model: modelFromProto(p.GetModel())})
	}
	for _, m := range f.GetMembers() {
		out.Members = append(out.Members, memberFromProto(m))
	}
	for _, i := range f.GetImages() {
		out.Images = append(out.Images, MemberImage{PodPool: i.GetPodPool(), Context: i.GetContext(), Image: i.GetImage(), Digest: i.GetDigest(), MissingBytes: i.GetMissingBytes()})
	}
	for _, u := range f.GetUnobserved() {
		cause := CauseOther // also for a cause of a later protocol revision
		if c := int(u.GetCause()); c >= 0 && c < len(Causes()) {
			cause = Causes()[c]
		}
		out.Unobserved = append(out.Unobserved, Unobserved{Kind: TargetKind(u.GetKind()), Name: u.GetName(), PodPool: u.GetPodPool(),
			Context: u.GetContext(), Cause: cause, Detail: u.GetDetail()})
	}
	return out
}

func inventoryToProto(inv Inventory) *pb.Inventory {
	out := &pb.Inventory{Gateway: inv.Gateway}
	for _, n := range inv.Nodes {
		out.Nodes = append(out.Nodes, nodeToProto(n))
	}
	for _, m := range inv.Models {
		out.Models = append(out.Models, modelToProto(m))
	}
	for _, l := range inv.Lanes {
		out.Lanes = append(out.Lanes, &pb.LaneSpec{Name: l.Name, Model: l.Model, Port: int32(l.Port), Aliases: l.Aliases, Residency: l.Residency})
	}
	for _, a := range inv.Aliases {
		out.Aliases = append(out.Aliases, &pb.AliasSpec{Name: a.Name, Lane: a.Lane, Fallbacks: a.Fallbacks})
	}
	for _, m := range inv.Members {
		out.Members = append(out.Members, memberToProto(m))
	}
	for _, m := range inv.Leaving {
		out.Leaving = append(out.Leaving, memberToProto(m))
	}
	for _, n := range inv.GatewayNodes {
		out.GatewayNodes = append(out.GatewayNodes, nodeToProto(n))
	}
	return out
}

func inventoryFromProto(inv *pb.Inventory) Inventory {
	out := Inventory{Gateway: inv.GetGateway()}
	for _, n := range inv.GetNodes() {
		out.Nodes = append(out.Nodes, nodeFromProto(n))
	}
	for _, m := range inv.GetModels() {
		out.Models = append(out.Models, modelFromProto(m))
	}
	for _, l := range inv.GetLanes() {
		out.Lanes = append(out.Lanes, LaneSpec{Name: l.GetName(), Model: l.GetModel(), Port: int(l.GetPort()), Aliases: l.GetAliases(), Residency: l.GetResidency()})
	}
	for _, a := range inv.GetAliases() {
		out.Aliases = append(out.Aliases, AliasSpec{Name: a.GetName(), Lane: a.GetLane(), Fallbacks: a.GetFallbacks()})
	}
	for _, m := range inv.GetMembers() {
		out.Members = append(out.Members, memberFromProto(m))
	}
	for _, m := range inv.GetLeaving() {
		out.Leaving = append(out.Leaving, memberFromProto(m))
	}
	for _, n := range inv.GetGatewayNodes() {
		out.GatewayNodes = append(out.GatewayNodes, nodeFromProto(n))
	}
	return out
}

func kindsToProto(kinds []StepKind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

func kindsFromProto(kinds []string) []StepKind {
	out := make([]StepKind, len(kinds))
	for i, k := range kinds {
		out[i] = StepKind(k)
	}
	return out
}
