package memest

import (
	"fmt"
	"strconv"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// The llama-server defaults the estimate assumes when a model's args do not
// set an argument (llama-server --help, llama.cpp common/arg.cpp):
// -c 0 takes the model's training context, -np -1 picks 4 slots sharing
// one unified KV cache, -b 2048, -ub 512, -ctk/-ctv f16. -fa auto turns
// flash attention on where the backend supports it; the estimate counts
// it as off, the larger of the two.
const (
	// DefaultParallel is the number of slots (-np) when a model's args set
	// none.
	DefaultParallel = 4
	// DefaultBatch is the logical batch size (-b), in tokens, when a
	// model's args set none.
	DefaultBatch = 2048
	// DefaultUBatch is the physical batch size (-ub), in tokens, when a
	// model's args set none.
	DefaultUBatch = 512
	// DefaultCache is the KV cache's type (-ctk, -ctv) when a model's args
	// set none.
	DefaultCache = "f16"
)

// Args are the llama-server arguments that drive a lane's memory, read
// from a model's args. A zero field means the argument is absent and
// llama-server's default applies.
type Args struct {
	// Context is -c/--ctx-size: the KV cache's tokens, shared by all
	// slots; 0 takes the model's training context.
	Context int32
	// Parallel is -np/--parallel: the number of slots.
	Parallel int32
	// CacheK and CacheV are -ctk/--cache-type-k and -ctv/--cache-type-v.
	CacheK, CacheV string
	// FlashAttn is -fa/--flash-attn on.
	FlashAttn bool
	// Batch and UBatch are -b/--batch-size and -ub/--ubatch-size.
	Batch, UBatch int32
}

// cacheTypes are the KV cache types llama-server accepts that the
// estimator prices.
var cacheTypes = map[string]gguf.GGMLType{
	"f32": gguf.GGMLTypeF32, "f16": gguf.GGMLTypeF16, "bf16": gguf.GGMLTypeBF16,
	"q8_0": gguf.GGMLTypeQ8_0, "q4_0": gguf.GGMLTypeQ4_0, "q4_1": gguf.GGMLTypeQ4_1,
	"iq4_nl": gguf.GGMLTypeIQ4_NL, "q5_0": gguf.GGMLTypeQ5_0, "q5_1": gguf.GGMLTypeQ5_1,
}

// ParseArgs reads the memory arguments from a llama-server command line
// (both "--flag value" and "--flag=value"), leaving the others alone. A
// value that is not a positive number or a known cache type is an error
// naming the argument.
func ParseArgs(args []string) (Args, error) {
	var a Args
	for i := 0; i < len(args); i++ {
		flag, val, inline := strings.Cut(args[i], "=")
		next := func() (string, error) {
			if inline {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", flag)
			}
			i++
			return args[i], nil
		}
		num := func(into *int32, zeroOK bool) error {
			s, err := next()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil || n < 0 || n == 0 && !zeroOK {
				return fmt.Errorf("%s %q: want a positive whole number", flag, s)
			}
			*into = int32(n)
			return nil
		}
		cache := func(into *string) error {
			s, err := next()
			if err != nil {
				return err
			}
			if _, ok := cacheTypes[strings.ToLower(s)]; !ok {
				return fmt.Errorf("%s %q: not a KV cache type the estimate knows (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)", flag, s)
			}
			*into = strings.ToLower(s)
			return nil
		}
		var err error
		switch flag {
		case "-c", "--ctx-size":
			err = num(&a.Context, true)
		case "-np", "--parallel":
			var s string
			if s, err = next(); err == nil {
				n, perr := strconv.ParseInt(s, 10, 32)
				switch {
				case perr == nil && n == -1: // llama-server's "auto", its default
				case perr != nil || n < 1:
					err = fmt.Errorf("%s %q: want a positive whole number, or -1 for auto", flag, s)
				default:
					a.Parallel = int32(n)
				}
			}
		case "-b", "--batch-size":
			err = num(&a.Batch, false)
		case "-ub", "--ubatch-size":
			err = num(&a.UBatch, false)
		case "-ctk", "--cache-type-k":
			err = cache(&a.CacheK)
		case "-ctv", "--cache-type-v":
			err = cache(&a.CacheV)
		case "-fa", "--flash-attn":
			a.FlashAttn = true // the old form: a bare flag
			s := peek(args, i, inline, val)
			switch strings.ToLower(s) {
			case "on", "1", "true", "enabled":
				_, err = next()
			case "off", "0", "false", "disabled", "auto":
				_, err = next()
				a.FlashAttn = false
			}
		case "--no-flash-attn", "-nofa":
			a.FlashAttn = false
		}
		if err != nil {
			return Args{}, err
		}
	}
	return a, nil
}

// peek returns the value the flag at i would take, without taking it.
func peek(args []string, i int, inline bool, val string) string {
	if inline {
		return val
	}
	if i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// String names the arguments with their values and says which are
// llama-server's defaults: "ctx 32768, 4 slots (default), KV f16/f16
// (default), flash attention off (default), batch 2048/512 (default)".
func (a Args) String() string {
	def := func(set bool) string {
		if set {
			return ""
		}
		return " (default)"
	}
	ctx := "ctx " + strconv.Itoa(int(a.Context))
	if a.Context == 0 {
		ctx = "ctx of the model (default)"
	}
	slots := int(a.Parallel)
	if slots == 0 {
		slots = DefaultParallel
	}
	k, v := cmpOr(a.CacheK, DefaultCache), cmpOr(a.CacheV, DefaultCache)
	fa := "off"
	if a.FlashAttn {
		fa = "on"
	}
	b, ub := cmpOr(a.Batch, DefaultBatch), cmpOr(a.UBatch, DefaultUBatch)
	return fmt.Sprintf("%s, %d slots%s, KV %s/%s%s, flash attention %s%s, batch %d/%d%s",
		ctx, slots, def(a.Parallel != 0), k, v, def(a.CacheK != "" || a.CacheV != ""),
		fa, def(a.FlashAttn), b, ub, def(a.Batch != 0 || a.UBatch != 0))
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// options turns the arguments into gguf-parser-go's estimate options, with
// llama-server's defaults where an argument is absent.
func (a Args) options() []gguf.GGUFRunEstimateOption {
	b, ub := cmpOr(a.Batch, DefaultBatch), cmpOr(a.UBatch, DefaultUBatch)
	opts := []gguf.GGUFRunEstimateOption{
		gguf.WithParallelSize(cmpOr(a.Parallel, DefaultParallel)),
		gguf.WithLLaMACppLogicalBatchSize(b),
		gguf.WithLLaMACppPhysicalBatchSize(min(ub, max(b, 32))),
		gguf.WithLLaMACppCacheKeyType(cacheTypes[cmpOr(a.CacheK, DefaultCache)]),
		gguf.WithLLaMACppCacheValueType(cacheTypes[cmpOr(a.CacheV, DefaultCache)]),
	}
	if a.Context > 0 {
		opts = append(opts, gguf.WithLLaMACppContextSize(a.Context))
	}
	if a.FlashAttn {
		opts = append(opts, gguf.WithFlashAttention())
	}
	return opts
}
