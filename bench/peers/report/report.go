package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Kinds of rows.
const (
	KindClosed = "closed" // JSON→gRPC, closed loop
	KindMCP    = "mcp"    // MCP tools/call, closed loop
	KindOpen   = "open"   // JSON→gRPC, open loop at a fixed rate
)

// Direct is the Front of the rows measured without a front (the reference).
const Direct = "direct"

// Run is everything one benchmark run measured.
type Run struct {
	Date     time.Time
	Machine  Machine
	Versions [][2]string // name, version
	Rounds   int
	Duration time.Duration
	Modes    []Mode
	Notes    []string // what did not run, and why
}

// Machine describes where the run happened.
type Machine struct {
	CPU    string
	Cores  int
	Kernel string
	Go     string
}

// Mode is the rows of one placement of the processes.
type Mode struct {
	Name string // "pinned" or "unpinned"
	Desc string
	Rows []Row
}

// Row is the median over the rounds of one scenario.
type Row struct {
	Kind     string
	Front    string // Direct, "Gatehouse", "grpc-gateway", "ToolHive vMCP"
	Body     string // "small", "4 KB", "100 B"
	Callers  int    // closed loop
	RateFrac float64
	Target   float64 // open loop: calls/s asked for
	Rate     float64 // calls/s (open loop: achieved)
	// CPU per call of each process; FrontCPU is 0 for Direct.
	FrontCPU, BackendCPU, LoadCPU time.Duration
	P50, P99                      time.Duration // open loop
	Errors, Dropped               int64         // summed over the rounds
	FirstErr                      string
}

// find returns the row matching k, or nil.
func (m Mode) find(k Row) *Row {
	for i := range m.Rows {
		r := &m.Rows[i]
		if r.Kind == k.Kind && r.Front == k.Front && r.Body == k.Body && r.Callers == k.Callers && r.RateFrac == k.RateFrac {
			return r
		}
	}
	return nil
}

// direct returns the reference row of r.
func (m Mode) direct(r Row) *Row {
	k := r
	k.Front = Direct
	return m.find(k)
}

// Ratio returns r's calls/s ÷ its direct row's, NaN without one.
func (m Mode) Ratio(r Row) float64 {
	d := m.direct(r)
	if d == nil || d.Rate == 0 {
		return math.NaN()
	}
	return r.Rate / d.Rate
}

// us prints d in µs, or in ms from 10 ms up.
func us(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func signedUs(d time.Duration) string {
	s := fmt.Sprintf("%+.0f µs", float64(d)/float64(time.Microsecond))
	if math.Abs(float64(d)) >= float64(10*time.Millisecond) {
		s = fmt.Sprintf("%+.1f ms", float64(d)/float64(time.Millisecond))
	}
	return s
}

func ratio(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func issues(r Row) string {
	var parts []string
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d errors (first: %s)", r.Errors, strings.ReplaceAll(r.FirstErr, "|", "/")))
	}
	if r.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d not sent (all workers busy)", r.Dropped))
	}
	if r.Kind == KindOpen && r.Target > 0 && r.Rate < 0.95*r.Target {
		parts = append(parts, "saturated: below the asked rate")
	}
	return strings.Join(parts, "; ")
}

// WriteTables writes the Markdown tables of one mode (its heading is the caller's).
func (m Mode) WriteTables(w io.Writer) {
	fmt.Fprint(w, "#### JSON → gRPC, closed loop\n\n")
	fmt.Fprint(w, "| body | callers | front | calls/s | ÷ direct | front CPU/call | backend CPU/call | load gen CPU/call | issues |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range m.Rows {
		if r.Kind == KindClosed {
			m.writeClosedRow(w, r)
		}
	}
	fmt.Fprint(w, "\n#### MCP `tools/call` (100-byte echo), closed loop\n\n")
	fmt.Fprint(w, "| body | callers | front | calls/s | ÷ direct | front CPU/call | upstream CPU/call | load gen CPU/call | issues |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range m.Rows {
		if r.Kind == KindMCP {
			m.writeClosedRow(w, r)
		}
	}
	fmt.Fprint(w, "\n#### JSON → gRPC, open loop (latency added over direct gRPC)\n\n")
	fmt.Fprint(w, "| body | rate | front | achieved calls/s | p50 | p99 | p50 over direct | p99 over direct | front CPU/call | issues |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range m.Rows {
		if r.Kind != KindOpen {
			continue
		}
		over50, over99 := "–", "–"
		if d := m.direct(r); d != nil && r.Front != Direct {
			over50, over99 = signedUs(r.P50-d.P50), signedUs(r.P99-d.P99)
		}
		front := "–"
		if r.Front != Direct {
			front = us(r.FrontCPU)
		}
		fmt.Fprintf(w, "| %s | %.0f%% of direct (%.0f/s) | %s | %.0f | %s | %s | %s | %s | %s | %s |\n",
			r.Body, 100*r.RateFrac, r.Target, r.Front, r.Rate, us(r.P50), us(r.P99), over50, over99, front, issues(r))
	}
	fmt.Fprintln(w)
}

func (m Mode) writeClosedRow(w io.Writer, r Row) {
	front := "–"
	if r.Front != Direct {
		front = us(r.FrontCPU)
	}
	fmt.Fprintf(w, "| %s | %d | %s | %.0f | %s | %s | %s | %s | %s |\n",
		r.Body, r.Callers, r.Front, r.Rate, ratio(m.Ratio(r)), front, us(r.BackendCPU), us(r.LoadCPU), issues(r))
}

// Charts returns the charts of mode m, keyed by file name suffix.
func (m Mode) Charts() map[string]Chart {
	label := func(r Row) string {
		if r.Kind == KindOpen {
			return fmt.Sprintf("%s, %s @ %.0f%%", r.Front, r.Body, 100*r.RateFrac)
		}
		if r.Kind == KindMCP {
			return fmt.Sprintf("MCP %s, %d callers", r.Front, r.Callers)
		}
		return fmt.Sprintf("%s, %s, %d callers", r.Front, r.Body, r.Callers)
	}
	ratios := Chart{Title: "calls/s ÷ direct (" + m.Name + ")", Unit: "×", Series: []string{"calls/s ÷ direct"}}
	cpu := Chart{Title: "CPU per call (" + m.Name + ")", Unit: " µs", Series: []string{"front", "backend / upstream", "load generator"}}
	lat := Chart{Title: "open-loop latency added over direct gRPC (" + m.Name + ")", Unit: " ms", Series: []string{"p50 added", "p99 added"}}
	usf := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, r := range m.Rows {
		switch r.Kind {
		case KindClosed, KindMCP:
			if r.Front != Direct {
				ratios.Groups = append(ratios.Groups, Group{Label: label(r), Values: []float64{m.Ratio(r)}})
			}
			front := math.NaN()
			if r.Front != Direct {
				front = usf(r.FrontCPU)
			}
			cpu.Groups = append(cpu.Groups, Group{Label: label(r), Values: []float64{front, usf(r.BackendCPU), usf(r.LoadCPU)}})
		case KindOpen:
			if d := m.direct(r); d != nil && r.Front != Direct {
				lat.Groups = append(lat.Groups, Group{Label: label(r), Values: []float64{usf(r.P50-d.P50) / 1000, usf(r.P99-d.P99) / 1000}})
			}
		}
	}
	return map[string]Chart{"ratio": ratios, "cpu": cpu, "latency": lat}
}

// WriteFiles writes the page to mdPath and the charts of every mode to imgDir as
// peers-<mode>-<chart>.svg, linked relative to the page.
func (r Run) WriteFiles(mdPath, imgDir string) error {
	if err := os.MkdirAll(imgDir, 0o750); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(mdPath), imgDir)
	if err != nil {
		return err
	}
	images := map[string][]string{}
	for _, m := range r.Modes {
		for _, name := range []string{"ratio", "cpu", "latency"} {
			c := m.Charts()[name]
			if len(c.Groups) == 0 {
				continue
			}
			file := fmt.Sprintf("peers-%s-%s.svg", m.Name, name)
			f, err := os.Create(filepath.Join(imgDir, file))
			if err != nil {
				return err
			}
			werr := c.WriteSVG(f)
			if err := f.Close(); werr == nil {
				werr = err
			}
			if werr != nil {
				return werr
			}
			images[m.Name] = append(images[m.Name], filepath.ToSlash(filepath.Join(rel, file)))
		}
	}
	f, err := os.Create(mdPath)
	if err != nil {
		return err
	}
	r.WriteMarkdown(f, images)
	return f.Close()
}
