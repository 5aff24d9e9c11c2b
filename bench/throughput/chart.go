package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Chart colours per engine.
var engineColor = map[string]color.RGBA{
	"limit":         {120, 120, 120, 255},
	"sidestream":    {31, 119, 180, 255},
	"kafka-streams": {214, 39, 40, 255},
	"goka":          {44, 160, 44, 255},
}

// drawChart draws two horizontal bar panels, throughput (records/s) and
// end-to-end latency (p50 bar, p99 whisker), one line per contender, into
// a PNG. Only the standard library and a bitmap font: no network, no fonts.
func drawChart(path string, rep report) error {
	var rs []row
	for _, r := range rep.Rows {
		if r.Skipped == "" {
			rs = append(rs, r)
		}
	}
	const (
		lineH  = 26
		top    = 50
		labelW = 160
		panelW = 380
		gap    = 90
		bottom = 40
	)
	w := labelW + panelW + gap + panelW + 30
	h := top + lineH*len(rs) + bottom
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	cv := canvas{img}
	text, textW, rect := cv.text, cv.textW, cv.rect
	black := color.Black
	grey := color.RGBA{200, 200, 200, 255}

	maxT, maxL := 0.0, 0.0
	for _, r := range rs {
		maxT = max(maxT, r.RecordsPS)
		maxL = max(maxL, r.P99MS)
	}
	maxT, maxL = niceCeil(maxT), niceCeil(maxL)
	x1 := labelW
	x2 := labelW + panelW + gap
	text(x1, 18, fmt.Sprintf("throughput, records/s (median of %d)", rep.Reps), black)
	text(x2, 18, "end-to-end latency at 50% load, ms", black)
	text(x2, 34, "bar: p50, whisker: p99", black)
	for i, r := range rs {
		y := top + i*lineH
		text(labelW-8-textW(r.Name), y+lineH/2+4, r.Name, black)
		c := engineColor[r.Engine]
		if maxT > 0 {
			bw := int(r.RecordsPS / maxT * panelW)
			rect(x1, y+4, x1+bw, y+lineH-4, c)
			text(x1+bw+4, y+lineH/2+4, kilo(r.RecordsPS), black)
		}
		if maxL > 0 && r.P99MS > 0 {
			bw := int(r.P50MS / maxL * panelW)
			rect(x2, y+6, x2+bw, y+lineH-6, c)
			wx := x2 + int(r.P99MS/maxL*panelW)
			rect(x2+bw, y+lineH/2-1, wx, y+lineH/2+1, c)
			rect(wx-1, y+5, wx+1, y+lineH-5, c)
			text(wx+4, y+lineH/2+4, fmt.Sprintf("%.0f / %.0f", r.P50MS, r.P99MS), black)
		}
	}
	axisY := top + lineH*len(rs) + 2
	for _, ax := range []struct {
		x   int
		max float64
		f   func(float64) string
	}{{x1, maxT, kilo}, {x2, maxL, func(v float64) string { return fmt.Sprintf("%.0f", v) }}} {
		rect(ax.x, top, ax.x+1, axisY, black)
		rect(ax.x, axisY, ax.x+panelW, axisY+1, black)
		for k := 0; k <= 4; k++ {
			x := ax.x + k*panelW/4
			rect(x, axisY, x+1, axisY+5, black)
			if k > 0 {
				rect(x, top, x+1, axisY, grey)
			}
			s := ax.f(ax.max * float64(k) / 4)
			text(x-textW(s)/2, axisY+18, s, black)
		}
	}
	return writePNG(path, img)
}

// canvas draws the chart's text and bars.
type canvas struct{ img *image.RGBA }

func (cv canvas) text(x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: cv.img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func (canvas) textW(s string) int { return font.MeasureString(basicfont.Face7x13, s).Ceil() }

func (cv canvas) rect(x0, y0, x1, y1 int, c color.Color) {
	draw.Draw(cv.img, image.Rect(x0, y0, x1, y1), image.NewUniform(c), image.Point{}, draw.Src)
}

func writePNG(path string, img image.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for p > v {
		p /= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
