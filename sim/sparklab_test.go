package sim

import (
	"slices"

	"poolc.dev/poolc/pools"
)

// sparkLab builds the IR of the spark-lab example (examples/spark-lab):
// three DGX Sparks of 128 GB and a Mac Studio of 192 GB, seven models,
// nine lanes and the pair-taken profile. It is built in Go so the tests
// of the simulator do not depend on the front ends.
func sparkLab() *pools.Pool {
	guard := pools.Guard{Ceiling: 0.90, ReserveGB: 8}
	spark := func(name, address string) pools.Node {
		return pools.Node{Name: name, Address: address, MemoryGB: 128, Labels: map[string]string{"class": "spark"}, Guard: guard}
	}
	model := func(name string, size, memory float64, args ...string) pools.Model {
		return pools.Model{Name: name, Path: "/models/" + name + ".gguf", Source: "nas.lan:/srv/models/" + name + ".gguf",
			SizeGB: size, MemoryGB: memory, Args: args}
	}
	lane := func(name, model string, r pools.Residency, port int, aliases []string, placement ...string) pools.Lane {
		return pools.Lane{Name: name, Model: model, Residency: r, Port: port, Aliases: aliases, Placement: placement}
	}
	video := lane("video", "video", pools.OnDemand, 8097, []string{"video"})
	video.Selector = map[string]string{"class": "spark"}
	return &pools.Pool{
		Name:  "spark-lab",
		Guard: guard,
		Nodes: []pools.Node{
			{Name: "mac-studio", Address: "mac-studio.lan", MemoryGB: 192, Labels: map[string]string{"class": "mac"},
				Guard: pools.Guard{Ceiling: 0.90, ReserveGB: 16}},
			spark("spark-node-01", "spark-01.lan"),
			spark("spark-node-02", "spark-02.lan"),
			spark("spark-node-03", "spark-03.lan"),
		},
		Models: []pools.Model{
			model("image", 24, 70),
			model("music", 12, 35),
			model("qwen3-27b", 17, 30, "--ctx-size", "32768"),
			model("qwen3-embedding", 8, 12, "--embedding"),
			model("tts", 4, 10),
			model("video", 28, 70),
			model("whisper", 3, 6),
		},
		Lanes: []pools.Lane{
			lane("cognition", "qwen3-27b", pools.KeepWarm, 8081, nil, "spark-node-03", "mac-studio"),
			lane("embeddings", "qwen3-embedding", pools.KeepWarm, 8090, []string{"embed"}, "spark-node-01", "spark-node-03"),
			lane("image", "image", pools.Preferred, 8095, nil, "spark-node-02", "spark-node-03"),
			lane("music", "music", pools.OnDemand, 8096, []string{"music"}, "spark-node-01", "mac-studio"),
			lane("stt", "whisper", pools.KeepWarm, 8091, []string{"transcribe"}, "spark-node-01", "spark-node-03"),
			lane("tts-1", "tts", pools.KeepWarm, 8092, nil, "spark-node-01", "mac-studio"),
			lane("tts-2", "tts", pools.KeepWarm, 8093, nil, "spark-node-02", "mac-studio"),
			lane("tts-3", "tts", pools.KeepWarm, 8094, nil, "spark-node-02", "mac-studio"),
			video,
		},
		Aliases: []pools.Alias{
			{Name: "chat", Lane: "cognition", Fallbacks: []string{"cloud"}},
			{Name: "draw", Lane: "image", Fallbacks: []string{"cloud"}},
			{Name: "embed", Lane: "embeddings", Fallbacks: []string{}},
			{Name: "music", Lane: "music", Fallbacks: []string{}},
			{Name: "speak", Lane: "tts-1", Fallbacks: []string{"tts-2", "tts-3"}},
			{Name: "transcribe", Lane: "stt", Fallbacks: []string{}},
			{Name: "video", Lane: "video", Fallbacks: []string{}},
		},
		Profiles: []pools.Profile{
			{Name: "pair-taken", Cordon: []string{"spark-node-01", "spark-node-02"}, Lanes: []pools.LaneOverride{
				{Lane: "cognition", Placement: []string{"mac-studio"}},
				{Lane: "image", Residency: pools.OnDemand},
			}},
			{Name: "standalone"},
		},
		ActiveProfile: "standalone",
		PodPools: []pools.PodPool{{Name: "harness", Image: "elanous-harness", Namespace: "harness", PodMemoryGB: 4, Members: []pools.Member{
			{Context: "pool-node-b", SSHHost: "node-b", Capacity: 8, Registry: pools.Registry{Name: "k3d-elanous-registry", Port: 5051}},
			{Context: "pool-node-c", SSHHost: "node-c", Capacity: 2, Registry: pools.Registry{Name: "k3d-elanous-registry", Port: 5052}},
			{Context: "k3d-elanous-h1", Capacity: 1},
		}}},
		Plugins: []pools.Plugin{{Name: "sim", Builtin: true}},
		State:   pools.StateBackend{Backend: "file", Path: "poolc.state.json"},
	}
}

// withPlacement returns a copy of the pool in which a lane lists other
// candidates.
func withPlacement(p *pools.Pool, lane string, nodes ...string) *pools.Pool {
	c := *p
	c.Lanes = slices.Clone(p.Lanes)
	for i := range c.Lanes {
		if c.Lanes[i].Name == lane {
			c.Lanes[i].Placement, c.Lanes[i].Selector = nodes, nil
		}
	}
	return &c
}
