package config

import (
	"slices"
	"strings"
	"testing"
)

// serve.allowed_hosts takes Host names as a browser sends them, and
// refuses what would never match one (a URL, a path, a wildcard), saying
// where.
func TestServeAllowedHosts(t *testing.T) {
	c, err := Parse("walkie.yaml", []byte("serve:\n  allowed_hosts: [walkie.example.com, \"walkie.lan:8443\", \"[::1]:7433\", 10.0.0.5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"walkie.example.com", "walkie.lan:8443", "[::1]:7433", "10.0.0.5"}; !slices.Equal(c.Serve.AllowedHosts, want) {
		t.Errorf("allowed hosts %q, want %q", c.Serve.AllowedHosts, want)
	}
	for _, c := range []struct{ yaml, want string }{
		{"serve:\n  allowed_hosts: [\"https://walkie.example.com\"]\n", `config walkie.yaml:2: serve.allowed_hosts[0]: "https://walkie.example.com" is not a host name`},
		{"serve:\n  allowed_hosts:\n    - ok.example.com\n    - \"*.example.com\"\n", `config walkie.yaml:4: serve.allowed_hosts[1]: "*.example.com" is not a host name`},
		{"serve:\n  allowed_hosts: [\"walkie.example.com/ui\"]\n", `serve.allowed_hosts[0]: "walkie.example.com/ui" is not a host name`},
		{"serve:\n  allowed_hosts: [\"\"]\n", `serve.allowed_hosts[0]: "" is not a host name`},
		{"serve:\n  allowed_hosts: walkie.example.com\n", `config walkie.yaml:2: serve.allowed_hosts: is "walkie.example.com", want a list like [a, b]`},
		{"serve:\n  allowed_host: [x]\n", `config walkie.yaml:2: serve.allowed_host: unknown key (did you mean "allowed_hosts"?)`},
	} {
		_, err := Parse("walkie.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
	prev, next := Default(), Default()
	next.Serve.AllowedHosts = []string{"walkie.example.com"}
	if got := Changes(prev, next); !slices.Equal(got, []string{"serve.allowed_hosts changed"}) {
		t.Errorf("Changes: %q", got)
	}
}

func TestCheckHost(t *testing.T) {
	for _, ok := range []string{"localhost", "walkie.example.com", "walkie.example.com:443", "127.0.0.1:7433", "[::1]", "[::1]:7433", "my_host"} {
		if err := CheckHost(ok); err != nil {
			t.Errorf("CheckHost(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "http://x", "x/y", "*.x", "x y", "x:", "x:port", "::1", "a..b", "user@x", "x:99999", "x:0"} {
		if err := CheckHost(bad); err == nil {
			t.Errorf("CheckHost(%q) accepted", bad)
		}
	}
}
