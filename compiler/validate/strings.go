package validate

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"poolc.dev/poolc/internal/spelling"
	"poolc.dev/poolc/pools"
)

// dnsLabelBytes is the spelling of a DNS-1123 label but its last byte,
// which is not '-': isDNSLabel says whether a name is one, as a
// Kubernetes namespace must be; the schema's #DNSLabel says the same for a
// namespace that is written.
var dnsLabelBytes = spelling.New("a-z0-9", "a-z0-9-", 1, 63)

func isDNSLabel(s string) bool { return dnsLabelBytes.Allows(s) && !strings.HasSuffix(s, "-") }

// maxImageName is the longest repository name (the reference without its
// tag and digest) the OCI distribution grammar allows.
const maxImageName = 255

// MaxArg is the longest argument of a model's server, in bytes: Linux
// refuses to start a program with a longer one (MAX_ARG_STRLEN, 128 KiB
// with its NUL), so a longer one would fail on the node after a prefetch.
const MaxArg = 128<<10 - 1

// strings checks what the schema's patterns cannot: that an IP address is
// written in its one shortest form, that a model's host:/path source does
// not name a host spelt like a URL scheme (file:/m, a file URL missing a
// slash), that a pod pool's namespace is a DNS
// label when it is taken from the pool's name, and the length of an image
// name apart from its tag and digest.
func (v *validator) strings() {
	for _, n := range v.p.Nodes {
		if msg := hostProblem(n.Address); msg != "" {
			v.errorf("bad-format", pools.Path{"node", n.Name, "address"}, "node %q: address %s", n.Name, msg)
		}
	}
	for _, m := range v.p.Models {
		if msg := pools.SchemeHostProblem(m.Source); msg != "" {
			v.errorf("bad-format", pools.Path{"model", m.Name, "source"}, "model %q: source %s", m.Name, msg)
		}
	}
	for _, m := range v.p.Models {
		for i, a := range m.Args {
			if len(a) > MaxArg {
				v.errorf("too-long", pools.Path{"model", m.Name, "args", strconv.Itoa(i)}, "model %q: argument %d is %d bytes long; a program's argument has at most %d (Linux refuses a longer one)", m.Name, i+1, len(a), MaxArg)
			}
		}
	}
	for _, pp := range v.p.PodPools {
		for _, m := range pp.Members {
			if msg := hostProblem(m.SSHHost); m.SSHHost != "" && msg != "" {
				v.errorf("bad-format", pools.Path{"pod_pool", pp.Name, "member", m.Context, "ssh_host"}, "pod_pool %q member %q: ssh_host %s", pp.Name, m.Context, msg)
			}
		}
		if !isDNSLabel(pp.Namespace) {
			v.errorf("bad-format", pools.Path{"pod_pool", pp.Name}, "pod_pool %q: its namespace defaults to its name, which is not a DNS-1123 label (at most 63 lowercase letters, digits and '-'): set namespace", pp.Name)
		}
		if name := imageName(pp.Image); len(name) > maxImageName {
			v.errorf("bad-format", pools.Path{"pod_pool", pp.Name, "image"}, "pod_pool %q: image name %.40q... is %d characters long; a repository name has at most %d", pp.Name, name, len(name), maxImageName)
		}
	}
}

// hostProblem says what is wrong with a host the schema's #Host admits, or
// "". The schema takes anything with a ':' or made of digits and dots as
// an IP address; here it must be one, written as netip writes it: IPv4
// without leading zeros, IPv6 in its shortest lower-case form, an IPv4
// address mapped into IPv6 as plain IPv4, and no port or zone.
func hostProblem(h string) string {
	numeric := strings.Trim(h, "0123456789.") == ""
	if !strings.Contains(h, ":") && !numeric {
		return ""
	}
	ip, err := netip.ParseAddr(h)
	switch {
	case err != nil && strings.Count(h, ":") == 1:
		return fmt.Sprintf("%q is not a host name or IP address; the SSH port of a node goes in ssh_port", h)
	case err != nil:
		return fmt.Sprintf("%q is not a host name or IP address", h)
	case ip.Is4In6():
		return fmt.Sprintf("%q must be written %q, as plain IPv4", h, ip.Unmap().String())
	case ip.String() != h:
		return fmt.Sprintf("%q must be written %q, the one spelling of that address", h, ip.String())
	}
	return ""
}

// imageName is the repository name of an image reference: without its
// digest and tag.
func imageName(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name
}
