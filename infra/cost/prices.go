package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// PriceRow is one dated, sourced figure of the price table.
type PriceRow struct {
	ID        string  `json:"id"`
	Service   string  `json:"service"`
	Item      string  `json:"item"`
	Unit      string  `json:"unit"`
	USD       float64 `json:"usd"` // the figure, in Unit (not always dollars: allowances and sizes too)
	Source    string  `json:"source"`
	AsOf      string  `json:"as_of"`
	Confirmed bool    `json:"confirmed"`
	Note      string  `json:"note,omitempty"`
}

// Prices is the price table.
type Prices struct {
	Note       string     `json:"note"`
	MonthHours float64    `json:"month_hours"`
	Rows       []PriceRow `json:"rows"`

	byID map[string]PriceRow
	used map[string]bool
}

//go:embed prices.json
var shippedPrices []byte

// DefaultPrices is the table shipped in infra/cost/prices.json.
func DefaultPrices() (*Prices, error) { return ParsePrices(shippedPrices) }

// LoadPrices reads a price table file (same format as prices.json).
func LoadPrices(file string) (*Prices, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParsePrices(data)
}

// ParsePrices reads a price table.
func ParsePrices(data []byte) (*Prices, error) {
	var p Prices
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	if p.MonthHours <= 0 {
		return nil, fmt.Errorf("price table: month_hours %v", p.MonthHours)
	}
	p.byID = map[string]PriceRow{}
	p.used = map[string]bool{}
	for _, r := range p.Rows {
		if r.ID == "" || r.Source == "" || r.AsOf == "" {
			return nil, fmt.Errorf("price table: row %q lacks an id, source or as_of date", r.ID)
		}
		if _, dup := p.byID[r.ID]; dup {
			return nil, fmt.Errorf("price table: row %q twice", r.ID)
		}
		p.byID[r.ID] = r
	}
	return &p, nil
}

// MonthSeconds is the seconds of a billing month (month_hours × 3600).
func (p *Prices) MonthSeconds() float64 { return p.MonthHours * 3600 }

// Get is the figure of row id, which is remembered as used. A missing row
// is a programming error.
func (p *Prices) Get(id string) float64 {
	r, ok := p.byID[id]
	if !ok {
		panic("cost: no price row " + id)
	}
	p.used[id] = true
	return r.USD
}

// Used are the rows Get was asked for, by id.
func (p *Prices) Used() []PriceRow {
	var out []PriceRow
	for id := range p.used {
		out = append(out, p.byID[id])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
