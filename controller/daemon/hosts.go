package daemon

import (
	"net"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// hostNames are the Host headers the daemon answers for. A page that
// rebinds its own domain name to 127.0.0.1 reaches the daemon with its
// own name in Host; refusing every name but the daemon's keeps such a
// page from reading anything, the way Jupyter, the Docker dashboard and
// Vite's dev server do.
type hostNames struct {
	port   string   // the listening port
	listen string   // the host of --listen, lower case
	anyIP  bool     // listening on every address: any IP literal names this machine
	extra  []string // --allowed-host
}

func newHostNames(listen, port string, allowed []string) hostNames {
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	return hostNames{port: port, listen: strings.ToLower(host), anyIP: host == "" || (ip != nil && ip.IsUnspecified()), extra: allowed}
}

// allowed reports whether host (a request's Host) names this daemon: a
// name the user allowed (without a port: on any port), or, on the listen
// port, localhost, a loopback address, the listen host itself, and when
// listening on every address any IP address. An IP literal cannot come
// from DNS rebinding, which always sends the attacker's name.
func (h hostNames) allowed(host string, configured []string) bool {
	name, port := splitHost(host)
	if port == "" {
		port = "80"
	}
	for _, lists := range [][]string{h.extra, configured} {
		for _, a := range lists {
			if an, ap := splitHost(a); an == name && (ap == "" || ap == port) {
				return true
			}
		}
	}
	if name == "" || port != h.port {
		return false
	}
	ip := net.ParseIP(name)
	return name == "localhost" || name == h.listen || (ip != nil && (ip.IsLoopback() || h.anyIP))
}

// splitHost splits "name[:port]" or "[v6][:port]" and lowers the name.
func splitHost(s string) (name, port string) {
	s = strings.ToLower(s)
	if n, p, err := net.SplitHostPort(s); err == nil {
		return n, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
}

// zapRequest are the fields of a refused request's log line.
func zapRequest(r *http.Request, code int) []zap.Field {
	fs := []zap.Field{zap.Int("status", code), zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.String("host", r.Host), zap.String("remote", r.RemoteAddr)}
	if o := r.Header.Get("Origin"); o != "" {
		fs = append(fs, zap.String("origin", o))
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		fs = append(fs, zap.String("sec_fetch_site", s))
	}
	return fs
}
