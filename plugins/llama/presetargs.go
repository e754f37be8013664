package llama

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// presetOption is one llama-server argument of an on-demand lane as a
// key of its router preset section: the flag without its dashes, and its
// value ("true" for a flag that takes none).
type presetOption struct {
	Key, Value string
}

// presetKeyRE is a key llama-server's preset parser reads (its ident).
var presetKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// presetOptions turns an on-demand lane's arguments into its preset
// section's keys: "--key value", "--key=value", or "--key" alone (a flag,
// "true"). A word after a flag is its value unless it is itself a flag (a
// negative number is a value). The router reports each option back by its
// long name (GET /models status.args), so an on-demand lane writes long
// flags; a flag given twice, or a value a preset line cannot hold, is
// refused.
func presetOptions(args []string) ([]presetOption, error) {
	var out []presetOption
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if strings.HasPrefix(a, "-") && !isNumber(a) {
				return nil, fmt.Errorf("argument %s: write its long form (as --ctx-size for -c): the router reports an on-demand lane's arguments by their long names, which poolc compares", a)
			}
			return nil, fmt.Errorf("argument %q follows no flag", a)
		}
		key, value, eq := strings.Cut(a[2:], "=")
		switch {
		case eq:
		case i+1 < len(args) && !isFlag(args[i+1]):
			value = args[i+1]
			i++
		default:
			value = "true"
		}
		if !presetKeyRE.MatchString(key) {
			return nil, fmt.Errorf("argument %s: not a flag name a router preset can hold", a)
		}
		if seen[key] {
			return nil, fmt.Errorf("argument --%s is given twice, which a router preset section cannot say", key)
		}
		if value == "" || strings.ContainsAny(value, "\n\r;#\x00") || strings.TrimSpace(value) != value {
			return nil, fmt.Errorf("argument --%s: value %q is empty, has surrounding spaces or holds one of ;# or a line break, which a preset line cannot hold", key, value)
		}
		seen[key] = true
		out = append(out, presetOption{Key: key, Value: value})
	}
	return out, nil
}

// isFlag reports whether an argument word is a flag rather than a value.
func isFlag(s string) bool { return strings.HasPrefix(s, "-") && !isNumber(s) }

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// routerModelArgs are the lane's own arguments in the command line the
// router reports it runs a model with (status.args): what is left once
// the words the router sets itself are gone (the model, alias, host and
// port it gives the model's process, and the options of its own command
// line, which its models inherit).
func routerModelArgs(status, router []string) []string {
	own := map[string]bool{}
	for _, o := range commandOptions(router) {
		own[o] = true
	}
	var out []string
	for _, o := range commandOptions(status) {
		flag, _, _ := strings.Cut(o, "\x00")
		if !managedFlags[flag] && !own[o] {
			out = append(out, strings.Split(o, "\x00")...)
		}
	}
	return out
}

// commandOptions splits a command line (its first word the binary) into
// its options, each a flag and its value joined by NUL ("--jinja" alone
// for a flag without one), as presetOptions reads words.
func commandOptions(argv []string) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		o := argv[i]
		if i+1 < len(argv) && isFlag(o) && !isFlag(argv[i+1]) && !strings.Contains(o, "=") {
			o += "\x00" + argv[i+1]
			i++
		}
		out = append(out, o)
	}
	return out
}

// sameOptions reports whether two argument lists are the same preset
// options, in any order and spelling ("--k=v" or "--k v").
func sameOptions(a, b []string) bool {
	oa, errA := presetOptions(a)
	ob, errB := presetOptions(b)
	if errA != nil || errB != nil {
		return false
	}
	key := func(o presetOption) string { return o.Key + "=" + o.Value }
	ka, kb := make([]string, len(oa)), make([]string, len(ob))
	for i, o := range oa {
		ka[i] = key(o)
	}
	for i, o := range ob {
		kb[i] = key(o)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}
