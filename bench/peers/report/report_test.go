package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNiceCeil(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0.3, 0.5}, {0.5, 0.5}, {0.51, 1}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {120, 200}, {0, 1}, {-1, 1},
	}
	for _, tt := range tests {
		if got := niceCeil(tt.in); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("niceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// svgDoc is what the tests read back from a chart.
type svgDoc struct {
	Rects []struct {
		X      float64 `xml:"x,attr"`
		Width  float64 `xml:"width,attr"`
		Height float64 `xml:"height,attr"`
		Fill   string  `xml:"fill,attr"`
	} `xml:"rect"`
	Texts []string `xml:"text"`
}

func parseSVG(t *testing.T, c Chart) svgDoc {
	t.Helper()
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	dec := xml.NewDecoder(&buf)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, buf.String())
	}
	return doc
}

func TestChartBarsAreProportional(t *testing.T) {
	c := Chart{Title: "ratio <&>", Unit: "×", Series: []string{"a"}, Groups: []Group{
		{Label: "one & two", Values: []float64{0.25}},
		{Label: "half", Values: []float64{0.5}},
		{Label: "none", Values: []float64{math.NaN()}},
	}}
	doc := parseSVG(t, c)
	var bars []float64
	for _, r := range doc.Rects {
		if r.Height == barH && r.Fill == palette[0] {
			bars = append(bars, r.Width)
		}
	}
	if len(bars) != 2 {
		t.Fatalf("want 2 bars (NaN draws none), got %v", bars)
	}
	if math.Abs(bars[1]-2*bars[0]) > 0.2 {
		t.Fatalf("bar widths %v not proportional to 0.25 and 0.5", bars)
	}
	if bars[1] > plotW || bars[1] < plotW/2 { // the axis ends at the next round step above 0.5
		t.Fatalf("largest bar %v, want within the plot width %d and above half of it", bars[1], plotW)
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{"ratio <&>", "one & two", "0.25×", "0.50×"} {
		if !strings.Contains(all, want) {
			t.Errorf("texts %q lack %q", all, want)
		}
	}
}

func TestChartNegativeValues(t *testing.T) {
	c := Chart{Title: "lat", Unit: " µs", Series: []string{"p50", "p99"}, Groups: []Group{
		{Label: "x", Values: []float64{-50, 100}},
	}}
	doc := parseSVG(t, c)
	var zeroX float64 = -1
	var neg, pos float64
	for _, r := range doc.Rects {
		switch r.Fill {
		case palette[0]:
			if r.Height == barH {
				neg, zeroX = r.Width, r.X+r.Width
			}
		case palette[1]:
			if r.Height == barH {
				pos = r.Width
				if zeroX >= 0 && math.Abs(r.X-zeroX) > 0.2 {
					t.Errorf("positive bar starts at %v, negative ends at %v: both must meet at zero", r.X, zeroX)
				}
			}
		}
	}
	if neg == 0 || pos == 0 || math.Abs(pos-2*neg) > 0.2 {
		t.Fatalf("bars %v and %v: want the positive twice the negative", neg, pos)
	}
}

func testRun() Run {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Microsecond)) }
	return Run{
		Date:     time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC),
		Machine:  Machine{CPU: "Test CPU", Cores: 2, Kernel: "Linux 6.1", Go: "go1.26.8"},
		Versions: [][2]string{{"grpc-gateway", "v2.33.0"}},
		Rounds:   3, Duration: 5 * time.Second,
		Notes: []string{"ToolHive vMCP: did not build (reason)."},
		Modes: []Mode{{Name: "pinned", Desc: "Servers on CPU 0.", Rows: []Row{
			{Kind: KindClosed, Front: Direct, Body: "small", Callers: 32, Rate: 10000, BackendCPU: ms(30), LoadCPU: ms(20)},
			{Kind: KindClosed, Front: "Gatehouse", Body: "small", Callers: 32, Rate: 4000, FrontCPU: ms(80), BackendCPU: ms(30), LoadCPU: ms(20)},
			{Kind: KindMCP, Front: Direct, Body: "100 B", Callers: 1, Rate: 2000, BackendCPU: ms(200)},
			{Kind: KindMCP, Front: "Gatehouse", Body: "100 B", Callers: 1, Rate: 500, FrontCPU: ms(900), BackendCPU: ms(300), Errors: 2, FirstErr: "HTTP 502 | x"},
			{Kind: KindOpen, Front: Direct, Body: "small", RateFrac: 0.2, Target: 2000, Rate: 2000, P50: ms(100), P99: ms(400)},
			{Kind: KindOpen, Front: "Gatehouse", Body: "small", RateFrac: 0.2, Target: 2000, Rate: 1500, P50: ms(350), P99: ms(20400), FrontCPU: ms(85)},
		}}},
	}
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	testRun().WriteMarkdown(&buf, map[string][]string{"pinned": {"img/peers-pinned-ratio.svg"}})
	md := buf.String()
	for _, want := range []string{
		"2026-11-27 08:00 UTC", "shared 2-core VM", "| CPU | Test CPU |", "| grpc-gateway | v2.33.0 |",
		"ToolHive vMCP: did not build (reason).", "make bench-peers", "### pinned\n\nServers on CPU 0.\n\n![peers-pinned-ratio]",
		"| small | 32 | direct | 10000 | 1.00 | – | 30 µs | 20 µs |  |",
		"| small | 32 | Gatehouse | 4000 | 0.40 | 80 µs | 30 µs | 20 µs |  |",
		"| 100 B | 1 | Gatehouse | 500 | 0.25 | 900 µs | 300 µs | 0 µs | 2 errors (first: HTTP 502 / x) |",
		"| small | 20% of direct (2000/s) | Gatehouse | 1500 | 350 µs | 20.4 ms | +250 µs | +20.0 ms | 85 µs | saturated: below the asked rate |",
		"![peers-pinned-ratio](img/peers-pinned-ratio.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q\n%s", want, md)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "docs", "benchmarks-peers.md")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testRun().WriteFiles(md, filepath.Join(dir, "docs", "img")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ratio", "cpu", "latency"} {
		file := "peers-pinned-" + name + ".svg"
		if !bytes.Contains(page, []byte("(img/"+file+")")) {
			t.Errorf("page does not link %s", file)
		}
		f, err := os.Open(filepath.Join(dir, "docs", "img", file))
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(f)
		for {
			if _, err := dec.Token(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("%s: %v", file, err)
				}
				break
			}
		}
		_ = f.Close()
	}
}
