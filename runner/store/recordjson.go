package store

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"poolc.dev/poolc/pools"
)

// A journal line is the JSON of a Record, exactly as encoding/json writes
// it. Every step writes two, so Queue appends them with the encoder below,
// which knows the record's fields and needs neither reflection nor a
// buffer of its own; TestRecordJSONIsEncodingJSON and FuzzRecordJSON hold
// it to encoding/json's bytes (field order, omitempty, escaping, floats),
// and a field added to Record or pools.Step without a line here fails
// them. What it cannot write as encoding/json would (a time outside years
// 0 to 9999, a float that is NaN or infinite) is left to encoding/json.

// appendRecord appends r's JSON line (without its newline) to b.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	if out, ok := appendRecordFast(b, r); ok {
		return out, nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return b, err
	}
	return append(b, line...), nil
}

// appendRecordFast is appendRecord's encoder; ok false means it could not
// write r as encoding/json would, and b is to be taken as it was.
func appendRecordFast(b []byte, r *Record) (out []byte, ok bool) {
	if y := r.Time.Year(); y < 0 || y > 9999 {
		return b, false
	}
	e := jsonWriter{b: b, ok: true}
	e.raw(`{"time":"`)
	e.b = r.Time.AppendFormat(e.b, time.RFC3339Nano)
	e.raw(`","apply":`)
	e.str(r.Apply)
	e.raw(`,"event":`)
	e.str(string(r.Event))
	e.optStr(`,"step":`, r.Step)
	e.optStr(`,"message":`, r.Message)
	if r.Effect != nil {
		e.raw(`,"effect":`)
		e.step(r.Effect)
	}
	e.optStr(`,"lineage":`, r.Lineage)
	if r.Serial != 0 {
		e.raw(`,"serial":`)
		e.b = strconv.AppendInt(e.b, r.Serial, 10)
	}
	e.optInt(`,"finished":`, r.Finished)
	e.raw(`}`)
	if !e.ok {
		return b, false
	}
	return e.b, true
}

// jsonWriter appends JSON to b; ok turns false at a value it cannot
// write as encoding/json would.
type jsonWriter struct {
	b  []byte
	ok bool
}

func (e *jsonWriter) raw(s string) { e.b = append(e.b, s...) }

func (e *jsonWriter) optStr(key, s string) {
	if s != "" {
		e.raw(key)
		e.str(s)
	}
}

func (e *jsonWriter) int(n int) { e.b = strconv.AppendInt(e.b, int64(n), 10) }

func (e *jsonWriter) optInt(key string, n int) {
	if n != 0 {
		e.raw(key)
		e.int(n)
	}
}

func (e *jsonWriter) optFloat(key string, f float64) {
	if f != 0 {
		e.raw(key)
		e.float(f)
	}
}

func (e *jsonWriter) bool(v bool) {
	if v {
		e.raw("true")
	} else {
		e.raw("false")
	}
}

// strs writes a list of strings; nil is null, as encoding/json has it.
func (e *jsonWriter) strs(ss []string) {
	if ss == nil {
		e.raw("null")
		return
	}
	e.raw("[")
	for i, s := range ss {
		if i > 0 {
			e.raw(",")
		}
		e.str(s)
	}
	e.raw("]")
}

// float writes f in encoding/json's form: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21 on, with a
// one-digit negative exponent ("1e-7", not "1e-07").
func (e *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.ok = false
		return
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if n := len(e.b); format == 'e' && n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
		e.b[n-2] = e.b[n-1]
		e.b = e.b[:n-1]
	}
}

const hexDigits = "0123456789abcdef"

// str writes s quoted as encoding/json does: '<', '>' and '&' escaped for
// HTML, control characters as \n, \r, \t, \b, \f or \u00XX, invalid UTF-8
// as \ufffd, and U+2028 and U+2029 escaped.
func (e *jsonWriter) str(s string) {
	b := append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
}

// step writes a pools.Step with its fields in declaration order.
func (e *jsonWriter) step(s *pools.Step) {
	e.raw(`{"id":`)
	e.str(s.ID)
	e.raw(`,"kind":`)
	e.str(string(s.Kind))
	e.raw(`,"target":`)
	e.str(s.Target)
	e.optStr(`,"node":`, s.Node)
	e.raw(`,"depends_on":`)
	e.strs(s.DependsOn)
	e.raw(`,"reason":`)
	e.str(s.Reason)
	e.raw(`,"estimate":{"seconds":`)
	e.float(s.Estimate.Seconds)
	e.optFloat(`,"transfer_gb":`, s.Estimate.TransferGB)
	if s.Estimate.TransferBytes != 0 {
		e.raw(`,"transfer_bytes":`)
		e.b = strconv.AppendInt(e.b, s.Estimate.TransferBytes, 10)
	}
	e.optFloat(`,"memory_gb":`, s.Estimate.MemoryGB)
	e.raw(`}`)
	if l := s.Lane; l != nil {
		if l.Observed != nil {
			// A step's lane carries no observation; encoding/json
			// writes one if it ever does.
			e.ok = false
		}
		e.raw(`,"lane":{"name":`)
		e.str(l.Name)
		e.raw(`,"node":`)
		e.str(l.Node)
		e.raw(`,"model":`)
		e.str(l.Model)
		e.raw(`,"port":`)
		e.int(l.Port)
		e.raw(`,"residency":`)
		e.str(string(l.Residency))
		e.optStr(`,"path":`, l.Path)
		e.optStr(`,"sha256":`, l.SHA256)
		e.optStr(`,"source":`, l.Source)
		if len(l.Args) > 0 {
			e.raw(`,"args":`)
			e.strs(l.Args)
		}
		e.raw(`,"memory_gb":`)
		e.float(l.MemoryGB)
		e.raw(`,"loaded":`)
		e.bool(l.Loaded)
		e.raw(`}`)
	}
	e.optStr(`,"from":`, string(s.From))
	if r := s.Route; r != nil {
		e.raw(`,"route":{"alias":`)
		e.str(r.Alias)
		e.raw(`,"lane":`)
		e.str(r.Lane)
		e.optStr(`,"node":`, r.Node)
		e.optInt(`,"port":`, r.Port)
		if r.Router {
			e.raw(`,"router":true`)
		}
		e.raw(`}`)
	}
	if p := s.Prefetch; p != nil {
		e.raw(`,"prefetch":{"node":`)
		e.str(p.Node)
		e.raw(`,"model":`)
		e.str(p.Model)
		e.optStr(`,"path":`, p.Path)
		e.optStr(`,"sha256":`, p.SHA256)
		e.raw(`,"size_gb":`)
		e.float(p.SizeGB)
		e.raw(`}`)
	}
	if m := s.Member; m != nil {
		e.raw(`,"member":{"pod_pool":`)
		e.str(m.PodPool)
		e.raw(`,"context":`)
		e.str(m.Context)
		e.raw(`,"priority":`)
		e.int(m.Priority)
		e.optStr(`,"ssh_host":`, m.SSHHost)
		e.optInt(`,"ssh_port":`, m.SSHPort)
		e.raw(`,"capacity":`)
		e.int(m.Capacity)
		e.optStr(`,"registry":`, m.Registry)
		e.optStr(`,"image":`, m.Image)
		e.optFloat(`,"pod_memory_gb":`, m.PodMemoryGB)
		e.raw(`}`)
	}
	e.raw(`}`)
}
