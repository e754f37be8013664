package servicestub

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Agent is what the launchctl stand-in reads of a LaunchAgent's plist.
type Agent struct {
	Label string
	// Program is ProgramArguments: the executable (absolute) and its
	// arguments.
	Program []string
	// Env is EnvironmentVariables, "NAME=value" sorted by name as read.
	Env []string
	// Stdout and Stderr are StandardOutPath and StandardErrorPath (both
	// appended to, as launchd does), Stdin StandardInPath.
	Stdout, Stderr, Stdin string
	RunAtLoad             bool
	// ExitTimeOut is how long launchd waits after SIGTERM before SIGKILL.
	ExitTimeOut time.Duration
}

// DefaultExitTimeOut is launchd's ExitTimeOut when a plist names none.
const DefaultExitTimeOut = 20 * time.Second

// ParsePlist reads a LaunchAgent's XML property list for the keys the
// stand-in implements; any other key, KeepAlive other than false, or a
// value of the wrong type is an error.
func ParsePlist(text string) (Agent, error) {
	a := Agent{ExitTimeOut: DefaultExitTimeOut}
	d := xml.NewDecoder(strings.NewReader(text))
	d.Strict = true
	// The top dict: skip to its start.
	for {
		tok, err := d.Token()
		if err != nil {
			return a, fmt.Errorf("plist: no dict (%v)", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			break
		} else if ok && se.Name.Local != "plist" {
			return a, fmt.Errorf("plist: <%s> where the top dict should be", se.Name.Local)
		}
	}
	for {
		key, end, err := nextKey(d)
		if err != nil {
			return a, err
		}
		if end {
			break
		}
		v, end, err := value(d, 0)
		if err == nil && end {
			err = errors.New("a key without a value")
		}
		if err != nil {
			return a, fmt.Errorf("plist key %s: %w", key, err)
		}
		if err := a.set(key, v); err != nil {
			return a, fmt.Errorf("plist key %s: %w", key, err)
		}
	}
	if a.Label == "" || len(a.Program) == 0 || !strings.HasPrefix(a.Program[0], "/") {
		return a, errors.New("plist: a Label and ProgramArguments with an absolute executable are required")
	}
	return a, nil
}

// plistValue is one value: a string, an integer (as text), a bool, an
// array or a dict (keys and values in order).
type plistValue struct {
	kind  string // "string", "integer", "true", "false", "array", "dict"
	text  string
	items []plistValue
	keys  []string
}

func (a *Agent) set(key string, v plistValue) error {
	str := func() (string, error) {
		if v.kind != "string" {
			return "", fmt.Errorf("a %s, not a string", v.kind)
		}
		return v.text, nil
	}
	var err error
	switch key {
	case "Label":
		a.Label, err = str()
	case "StandardInPath":
		a.Stdin, err = str()
	case "StandardOutPath":
		a.Stdout, err = str()
	case "StandardErrorPath":
		a.Stderr, err = str()
	case "ProgramArguments":
		if v.kind != "array" {
			return fmt.Errorf("a %s, not an array", v.kind)
		}
		for _, it := range v.items {
			if it.kind != "string" {
				return fmt.Errorf("an array holding a %s", it.kind)
			}
			a.Program = append(a.Program, it.text)
		}
	case "EnvironmentVariables":
		if v.kind != "dict" {
			return fmt.Errorf("a %s, not a dict", v.kind)
		}
		for i, it := range v.items {
			if it.kind != "string" {
				return fmt.Errorf("variable %s is a %s", v.keys[i], it.kind)
			}
			a.Env = append(a.Env, v.keys[i]+"="+it.text)
		}
	case "RunAtLoad", "KeepAlive":
		if v.kind != "true" && v.kind != "false" {
			return fmt.Errorf("a %s, not a bool", v.kind)
		}
		if key == "KeepAlive" && v.kind == "true" {
			return errors.New("true is not implemented by the stand-in")
		}
		a.RunAtLoad = a.RunAtLoad || key == "RunAtLoad" && v.kind == "true"
	case "ExitTimeOut":
		n, perr := strconv.Atoi(v.text)
		if v.kind != "integer" || perr != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number of seconds", v.text)
		}
		a.ExitTimeOut = time.Duration(n) * time.Second
	default:
		return errors.New("not implemented by the stand-in")
	}
	return err
}

// nextKey reads the next <key> of a dict, or its end.
func nextKey(d *xml.Decoder) (string, bool, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return "", false, fmt.Errorf("plist: %w", err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return "", true, nil
		case xml.StartElement:
			if t.Name.Local != "key" {
				return "", false, fmt.Errorf("plist: <%s> where a key should be", t.Name.Local)
			}
			var k string
			if err := d.DecodeElement(&k, &t); err != nil {
				return "", false, fmt.Errorf("plist: %w", err)
			}
			return k, false, nil
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return "", false, fmt.Errorf("plist: text %q in a dict", t)
			}
		}
	}
}

// value reads the next value element; end reports the end of the
// enclosing element instead.
func value(d *xml.Decoder, depth int) (v plistValue, end bool, err error) {
	if depth > 8 {
		return v, false, errors.New("nested too deep")
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return v, false, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return v, true, nil
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return v, false, fmt.Errorf("text %q where a value should be", t)
			}
		case xml.StartElement:
			v.kind = t.Name.Local
			switch v.kind {
			case "string", "integer":
				err = d.DecodeElement(&v.text, &t)
			case "true", "false":
				err = d.Skip()
			case "array":
				for {
					it, end, err := value(d, depth+1)
					if err != nil || end {
						return v, false, err
					}
					v.items = append(v.items, it)
				}
			case "dict":
				for {
					k, end, err := nextKey(d)
					if err != nil || end {
						return v, false, err
					}
					it, end, err := value(d, depth+1)
					if err == nil && end {
						err = errors.New("a key without a value")
					}
					if err != nil {
						return v, false, err
					}
					v.keys, v.items = append(v.keys, k), append(v.items, it)
				}
			default:
				err = fmt.Errorf("<%s> is not implemented by the stand-in", v.kind)
			}
			return v, false, err
		}
	}
}
