// Package report renders the benchmark's results: the Markdown page and its SVG charts,
// written by hand (no plotting dependency).
package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart is a horizontal grouped bar chart: one group of bars per label, one bar per series.
type Chart struct {
	Title  string
	Unit   string   // shown after each value and on the axis ("×", "µs")
	Series []string // legend, in bar order within a group
	Groups []Group
}

// Group is one labelled row of bars; Values has one entry per series, NaN for none.
type Group struct {
	Label  string
	Values []float64
}

var palette = []string{"#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#c53030"}

// Layout of a chart, in SVG user units.
const (
	labelW  = 260
	plotW   = 440
	valueW  = 80
	barH    = 14
	barGap  = 2
	groupGp = 10
	titleH  = 28
	legendH = 22
	axisH   = 26
)

// WriteSVG writes c as a standalone SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	lo, hi := 0.0, 0.0
	for _, g := range c.Groups {
		for _, v := range g.Values {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	// Four grid steps of a round size that cover [lo, hi], zero on a grid line.
	step := niceCeil((hi - lo) / 4)
	lo = math.Floor(lo/step+1e-9) * step
	hi = math.Ceil(hi/step-1e-9) * step
	ticks := int(math.Round((hi - lo) / step))
	x := func(v float64) float64 { return labelW + (v-lo)/(hi-lo)*plotW }
	n := max(len(c.Series), 1)
	groupH := n*(barH+barGap) - barGap
	height := titleH + legendH + len(c.Groups)*(groupH+groupGp) + axisH
	width := labelW + plotW + valueW
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", 8, html.EscapeString(c.Title))
	lx := labelW
	for i, s := range c.Series {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, titleH, palette[i%len(palette)], lx+14, titleH+9, html.EscapeString(s))
		lx += 14 + 7*len(s) + 16
	}
	top := titleH + legendH
	plotBottom := height - axisH
	// grid lines and axis labels at five ticks
	for i := range ticks + 1 {
		v := lo + step*float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top-4, x(v), plotBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s%s</text>`+"\n", x(v), plotBottom+14, formatValue(v), html.EscapeString(c.Unit))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x(0), top-4, x(0), plotBottom)
	y := top
	for _, g := range c.Groups {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+groupH/2+4, html.EscapeString(g.Label))
		for i := range c.Series {
			by := y + i*(barH+barGap)
			if i < len(g.Values) && !math.IsNaN(g.Values[i]) {
				v := g.Values[i]
				x0, x1 := x(math.Min(0, v)), x(math.Max(0, v))
				fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, by, math.Max(x1-x0, 0.5), barH, palette[i%len(palette)])
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#222">%s%s</text>`+"\n", x1+4, by+barH-3, formatValue(v), html.EscapeString(c.Unit))
			}
		}
		y += groupH + groupGp
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v > 0 up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// formatValue prints v with about three significant digits.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
