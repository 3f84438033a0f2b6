package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/walkie-sh/walkie/controller"
)

// metrics are the daemon's Prometheus series, in a registry of its own
// (several daemons may live in one test binary).
type metrics struct {
	reg           *prometheus.Registry
	turns         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	cost          *prometheus.CounterVec
	notifications *prometheus.CounterVec
	reloads       *prometheus.CounterVec
}

func newMetrics(d *Daemon) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "walkie_turns_total",
			Help: "Turn attempts recorded, by agent and outcome (accepted, timeout, no-turn, …)."}, []string{"agent", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "walkie_turn_duration_seconds",
			Help:    "Wall time of each turn attempt's session, by agent.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13)}, []string{"agent"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "walkie_cost_usd_total",
			Help: "Cost of turn attempts in USD, as reported by the CLI or estimated from the pricing table, by agent."}, []string{"agent"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "walkie_notifications_total",
			Help: "Notification deliveries by sink and result (delivered, retried, failed, dropped)."}, []string{"sink", "result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "walkie_config_reloads_total",
			Help: "Config reloads (SIGHUP) by result: applied or refused."}, []string{"result"}),
	}
	m.reg.MustRegister(m.turns, m.duration, m.cost, m.notifications, m.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "walkie_sessions_running",
			Help: "Agent sessions running now (session slots held)."}, func() float64 { return float64(d.limits.Running()) }),
		&debatesCollector{d: d},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) turnRecorded(r *controller.TurnRecord) {
	if r == nil {
		return
	}
	m.turns.WithLabelValues(r.Agent, string(r.Outcome)).Inc()
	m.duration.WithLabelValues(r.Agent).Observe(float64(r.DurationMS) / 1000)
	if r.Usage != nil && r.Usage.CostUSD > 0 {
		m.cost.WithLabelValues(r.Agent).Add(r.Usage.CostUSD)
	}
}

// debatesCollector counts debates by status at scrape time.
type debatesCollector struct{ d *Daemon }

var debatesDesc = prometheus.NewDesc("walkie_debates", "Debates the daemon knows, by status.", []string{"status"}, nil)

func (c *debatesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- debatesDesc }

func (c *debatesCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	for _, v := range c.d.Debates() {
		if v.Status != "" {
			counts[v.Status]++
		}
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(debatesDesc, prometheus.GaugeValue, float64(n), status)
	}
}
