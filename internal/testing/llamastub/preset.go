package llamastub

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Preset is a router-mode models preset: an INI file whose "[*]" section
// holds defaults for every model and whose other sections each name a
// model. Keys are llama-server flag names without the leading dashes
// ("model", "alias", "ctx-size") plus "load-on-startup".
type Preset struct {
	Defaults map[string]string
	Models   []PresetModel
}

// PresetModel is one model section of a preset.
type PresetModel struct {
	Name          string
	Path          string
	Aliases       []string
	LoadOnStartup bool
	// Settings are the section's keys merged over the defaults.
	Settings map[string]string
}

// ParsePreset reads a preset. file names the source in errors, which read
// "file:line: message".
func ParsePreset(file, text string) (*Preset, error) {
	p := &Preset{Defaults: map[string]string{}}
	var cur map[string]string
	var names []string
	sections := map[string]map[string]string{}
	lines := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: section header %q has no closing ]", file, n, line)
			}
			name := strings.TrimSpace(line[1 : len(line)-1])
			switch {
			case name == "":
				return nil, fmt.Errorf("%s:%d: empty section name", file, n)
			case name == "*":
				cur = p.Defaults
			case sections[name] != nil:
				return nil, fmt.Errorf("%s:%d: section [%s] repeats the one on line %d", file, n, name, lines[name])
			default:
				cur = map[string]string{}
				sections[name], lines[name] = cur, n
				names = append(names, name)
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key = value, got %q", file, n, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "" {
			return nil, fmt.Errorf("%s:%d: empty key", file, n)
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: key %q before any section", file, n, key)
		}
		cur[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	for _, name := range names {
		m := PresetModel{Name: name, Settings: map[string]string{}}
		for k, v := range p.Defaults {
			m.Settings[k] = v
		}
		for k, v := range sections[name] {
			m.Settings[k] = v
		}
		m.Path = m.Settings["model"]
		if m.Path == "" {
			m.Path = m.Settings["m"]
		}
		if m.Path == "" {
			return nil, fmt.Errorf("%s:%d: model [%s] has no model = PATH", file, lines[name], name)
		}
		if a := m.Settings["alias"]; a != "" {
			m.Aliases = splitAliases(a)
		}
		if v, ok := m.Settings["load-on-startup"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: model [%s]: load-on-startup = %q is not true or false", file, lines[name], name, v)
			}
			m.LoadOnStartup = b
		}
		p.Models = append(p.Models, m)
	}
	return p, nil
}
