package cost

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// palette: distinguishable on white, in order of the variant lines.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}

// WriteChart draws cost against rate on log-log axes as SVG: one line per
// deployment, the SQS lines dashed in grey and black, crossovers circled.
func WriteChart(w io.Writer, title, subtitle string, cs []Curve, xs []Crossover) error {
	const (
		width, height = 1100, 640
		left, right   = 90, 360 // the legend sits right of the plot
		top, bottom   = 70, 70
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		for i := range c.Rates {
			xmin, xmax = math.Min(xmin, c.Rates[i]), math.Max(xmax, c.Rates[i])
			if c.USD[i] > 0 {
				ymin, ymax = math.Min(ymin, c.USD[i]), math.Max(ymax, c.USD[i])
			}
		}
	}
	if math.IsInf(xmin, 0) || math.IsInf(ymin, 0) {
		return fmt.Errorf("chart: nothing to draw")
	}
	lx0, lx1 := math.Floor(math.Log10(xmin)), math.Ceil(math.Log10(xmax))
	ly0, ly1 := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	px := func(x float64) float64 { return float64(left) + (math.Log10(x)-lx0)/(lx1-lx0)*pw }
	py := func(y float64) float64 {
		y = math.Max(y, math.Pow(10, ly0))
		return float64(top) + ph - (math.Log10(y)-ly0)/(ly1-ly0)*ph
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="30" font-size="20" font-weight="bold">%s</text>`+"\n", left, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="52" font-size="13" fill="#444">%s</text>`+"\n", left, esc(subtitle))
	// Grid and ticks: every decade labelled, 2 and 5 as faint lines.
	for e := lx0; e <= lx1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) > lx1+1e-9 {
				continue
			}
			x := px(v)
			stroke, sw := "#e6e6e6", 1.0
			if m == 1 {
				stroke, sw = "#c8c8c8", 1.2
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="13" text-anchor="middle">%s</text>`+"\n", x, height-bottom+22, num(v))
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%.1f"/>`+"\n", x, top, x, height-bottom, stroke, sw)
		}
	}
	for e := ly0; e <= ly1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) > ly1+1e-9 {
				continue
			}
			y := py(v)
			stroke, sw := "#e6e6e6", 1.0
			if m == 1 {
				stroke, sw = "#c8c8c8", 1.2
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="13" text-anchor="end">$%s</text>`+"\n", left-8, y+4, num(v))
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`+"\n", left, y, width-right, y, stroke, sw)
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#555"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" font-size="14" text-anchor="middle">messages per second (send → receive → delete), log scale</text>`+"\n", float64(left)+pw/2, height-20)
	fmt.Fprintf(&b, `<text x="22" y="%.0f" font-size="14" text-anchor="middle" transform="rotate(-90 22 %.0f)">USD per month, log scale</text>`+"\n", float64(top)+ph/2, float64(top)+ph/2)

	ci := 0
	ly := top + 10
	for _, c := range cs {
		color, dash, sw := "", "", 2.6
		switch {
		case c.Native && strings.Contains(c.Name, "FIFO"):
			color, dash, sw = "#000000", ` stroke-dasharray="9 5"`, 2.2
		case c.Native:
			color, dash, sw = "#888888", ` stroke-dasharray="3 4"`, 2.2
		default:
			color = palette[ci%len(palette)]
			ci++
		}
		var pts []string
		for i := range c.Rates {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.Rates[i]), py(c.USD[i])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f"%s points="%s"/>`+"\n", color, sw, dash, strings.Join(pts, " "))
		// Legend entry, wrapped at 34 characters.
		lx := width - right + 20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%.1f"%s/>`+"\n", lx, ly, lx+30, ly, color, sw, dash)
		for i, part := range wrap(c.Name, 36) {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13">%s</text>`+"\n", lx+38, ly+4+16*i, esc(part))
			if i > 0 {
				ly += 16
			}
		}
		ly += 26
	}
	// Crossovers: a lettered circle on the line, the letters explained
	// under the legend (labels beside the circles collide when two lines
	// cross one SQS line near the same point).
	// Crossovers within a few pixels of each other share a circle.
	type mark struct {
		x, y    float64
		letters []string
	}
	var marks []*mark
	for i, x := range xs {
		cx, cy := px(x.Rate), py(x.USD)
		var m *mark
		for _, o := range marks {
			if math.Hypot(o.x-cx, o.y-cy) < 10 {
				m = o
				break
			}
		}
		if m == nil {
			m = &mark{x: cx, y: cy}
			marks = append(marks, m)
		}
		m.letters = append(m.letters, letter(i))
	}
	for i, m := range marks {
		dy := -11.0
		if i%2 == 1 {
			dy = 22
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="white" stroke="#000" stroke-width="2"/>`+"\n", m.x, m.y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="13" font-weight="bold" text-anchor="middle">%s</text>`+"\n", m.x, m.y+dy, strings.Join(m.letters, ","))
	}
	if len(xs) > 0 {
		ly += 4
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="6" fill="white" stroke="#000" stroke-width="2"/>`+"\n", width-right+35, ly)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13">crossovers with the SQS lines:</text>`+"\n", width-right+58, ly+4)
		ly += 22
		for i, x := range xs {
			if ly > height-20 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">… and %d more (report.md)</text>`+"\n", width-right+20, ly, len(xs)-i)
				break
			}
			for j, part := range wrap(fmt.Sprintf("%s: %s × %s at %s msg/s", letter(i), x.Curve, x.SQS, num(x.Rate)), 44) {
				fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", width-right+20, ly, esc(part))
				if j >= 0 {
					ly += 15
				}
			}
			ly += 3
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// letter names crossover i: A, B, ... Z, AA, ...
func letter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return letter(i/26-1) + letter(i%26)
}

func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > n {
			out = append(out, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(out, line)
}

// num prints a tick value or rate: 1, 10, 1k, 10k, 3.2, 250.
func num(v float64) string {
	switch {
	case v >= 1e6:
		return trim(v/1e6) + "M"
	case v >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	s := fmt.Sprintf("%.2g", v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
