package daemon

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Debates lists every debate the daemon knows, sorted by file.
func (d *Daemon) Debates() []DebateView {
	d.mu.Lock()
	ws := make([]*worker, 0, len(d.workers))
	for _, w := range d.workers {
		ws = append(ws, w)
	}
	d.mu.Unlock()
	now := time.Now()
	out := make([]DebateView, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.snapshot(now))
	}
	slices.SortFunc(out, func(a, b DebateView) int { return strings.Compare(a.File, b.File) })
	return out
}

// handler serves the HTTP API:
//
//	GET /healthz       liveness; never needs the token
//	GET /api/debates   every debate as JSON
//	GET /metrics       Prometheus
//	GET /              a live page over /api/debates
func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"status": "ok", "pid": os.Getpid(), "dir": d.dir,
			"uptime_s": time.Since(d.started).Round(time.Second).Seconds()})
	})
	mux.HandleFunc("GET /api/debates", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"dir": d.dir, "sessions_running": d.limits.Running(), "debates": d.Debates()})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(livePage))
	})
	if d.o.Token == "" {
		return mux
	}
	want := []byte("Bearer " + d.o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		// The live page itself is public (it holds no data); its script
		// sends the token it is given in the URL fragment.
		if r.URL.Path != "/healthz" && r.URL.Path != "/" && subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="walkie"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// livePage polls /api/debates from the browser every two seconds; the
// daemon itself never polls. With a token, open it as /#token=TOKEN.
const livePage = `<!doctype html>
<html><head><meta charset="utf-8"><title>walkie serve</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #ddd;vertical-align:top}
.open{color:#06c}.converged{color:#080}.failed,.halted,.over-budget,.deadlocked{color:#b00}
small{color:#777}
</style></head><body>
<h1>walkie serve <small id="dir"></small></h1>
<p id="sum"></p>
<table><thead><tr><th>debate</th><th>status</th><th>turn</th><th>round</th><th>now</th><th>cost</th></tr></thead>
<tbody id="rows"></tbody></table>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get("token");
function esc(s){return String(s??"").replace(/[&<>"]/g,c=>({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c]))}
async function tick(){
  try{
    const r = await fetch("api/debates",{headers: token?{Authorization:"Bearer "+token}:{}});
    const j = await r.json();
    document.getElementById("dir").textContent = j.dir;
    document.getElementById("sum").textContent = j.debates.length+" debates, "+j.sessions_running+" sessions running";
    document.getElementById("rows").innerHTML = j.debates.map(d=>{
      let now = d.running ? esc(d.running.agent)+" writing turn "+d.running.turn+" ("+Math.round(d.running.elapsed_s)+"s) <small>"+esc(d.running.last_line)+"</small>"
              : esc(d.waiting||d.error||d.reason||"");
      return "<tr><td>"+esc(d.id)+"<br><small>"+esc(d.file)+"</small></td><td class='"+esc(d.status)+"'>"+esc(d.status)+
        "</td><td>"+d.turns+(d.next?" → "+esc(d.next):"")+"</td><td>"+(d.round||"")+(d.max_rounds?"/"+d.max_rounds:"")+
        "</td><td>"+now+"</td><td>$"+(d.cost_usd||0).toFixed(4)+"</td></tr>";
    }).join("");
  }catch(e){document.getElementById("sum").textContent="daemon unreachable: "+e}
}
tick(); setInterval(tick, 2000);
</script></body></html>
`
