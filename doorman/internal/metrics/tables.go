package metrics

import "github.com/prometheus/client_golang/prometheus"

// tableEntries is napwake_doorman_table_entries: the size of each of the
// doorman's in-memory tables, counted when scraped (cheap: a length under
// each table's lock), so a soak or an alert sees a map growing without
// bound. Its label is a table's name from a fixed list, never a key.
type tableEntries struct {
	desc  *prometheus.Desc
	names []string
	sizes func() map[string]int
}

// ObserveTables registers napwake_doorman_table_entries{table}, one series
// per name, each scrape reading sizes. Call it once.
func (m *Metrics) ObserveTables(names []string, sizes func() map[string]int) {
	m.Registry.MustRegister(&tableEntries{
		desc: prometheus.NewDesc("napwake_doorman_table_entries",
			"Entries in each of the doorman's in-memory tables (listeners, connections, routed keys, wake memos, limiters), by table.",
			[]string{"table"}, nil),
		names: names, sizes: sizes,
	})
}

// Describe implements prometheus.Collector.
func (t *tableEntries) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector.
func (t *tableEntries) Collect(ch chan<- prometheus.Metric) {
	sizes := t.sizes()
	for _, n := range t.names {
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.GaugeValue, float64(sizes[n]), n)
	}
}
