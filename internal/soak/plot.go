package soak

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// Series is one line of a plot.
type Series struct {
	Name    string
	Samples []Sample
}

// Mark is a labelled instant of a plot (a chaos event).
type Mark struct {
	At    time.Time
	Label string
}

var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// SVG draws the series over time since start as an SVG line plot with the marks as dashed
// vertical lines; unit names the y axis.
func SVG(title, unit string, start time.Time, series []Series, marks []Mark) string {
	const w, h, left, right, top, bottom = 900.0, 560.0, 70.0, 20.0, 40.0, 250.0
	pw, ph := w-left-right, h-top-bottom
	maxT, maxV := 1.0, 0.0
	for _, s := range series {
		for _, p := range s.Samples {
			maxT = math.Max(maxT, p.At.Sub(start).Seconds())
			maxV = math.Max(maxV, p.Value)
		}
	}
	for _, m := range marks {
		maxT = math.Max(maxT, m.At.Sub(start).Seconds())
	}
	maxV = niceCeil(maxV * 1.1)
	x := func(t float64) float64 { return left + pw*t/maxT }
	y := func(v float64) float64 { return top + ph*(1-v/maxV) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	for i := range 6 {
		v := maxV * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), left+pw, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-5, y(v)+4, short(v))
	}
	for i := range 7 {
		t := maxT * float64(i) / 6
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0fs</text>`+"\n", x(t), top+ph+15, t)
	}
	fmt.Fprintf(&b, `<text x="14" y="%.1f" transform="rotate(-90 14 %.1f)" text-anchor="middle">%s</text>`+"\n", top+ph/2, top+ph/2, html.EscapeString(unit))
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	for i, m := range marks {
		mx := x(m.At.Sub(start).Seconds())
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`+"\n", mx, top, mx, top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" transform="rotate(45 %.1f %.1f)" fill="#555">%d %s</text>`+"\n",
			mx, top+ph+28, mx, top+ph+28, i+1, html.EscapeString(m.Label))
	}
	for i, s := range series {
		c := plotColors[i%len(plotColors)]
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
			}
			pts = nil
		}
		for j, p := range s.Samples {
			// A gap (the replica was down) breaks the line.
			if j > 0 && p.At.Sub(s.Samples[j-1].At) > 3*medianStep(s.Samples) {
				flush()
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.At.Sub(start).Seconds()), y(p.Value)))
		}
		flush()
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			left+pw-150, top+12+float64(i)*14, c, left+pw-134, top+16+float64(i)*14, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func medianStep(s []Sample) time.Duration {
	if len(s) < 2 {
		return time.Hour
	}
	var ds []float64
	for i := 1; i < len(s); i++ {
		ds = append(ds, float64(s[i].At.Sub(s[i-1].At)))
	}
	return time.Duration(Median(ds))
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
