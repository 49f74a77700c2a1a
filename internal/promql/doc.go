// Package promql lists the PromQL expressions Gatehouse ships for operators — every query
// of the Grafana dashboards in deploy/grafana/dashboards and every alert rule of
// deploy/prometheus/alerts.yml — and the metric names they may use, so that tests can
// check the expressions against the gateway's metrics and run them against a real
// Prometheus.
package promql
