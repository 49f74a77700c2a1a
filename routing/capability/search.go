package capability

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// BM25 parameters: term-frequency saturation and length normalisation.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// idWeight is how many times the terms of an id count, against once for the terms of
	// the description.
	idWeight = 2
)

// index is a BM25 index over the ids and descriptions of a snapshot's entries. It is
// built once per snapshot and only read after.
type index struct {
	docs  []document
	df    map[string]int // documents containing each term
	avgdl float64
}

// document is one entry's terms.
type document struct {
	tf     map[string]int
	length int
	id     string // the id in lower case, for exact matches
}

// hit is one search result: a document, its score in [0, 1], and its raw BM25 score.
type hit struct {
	doc        int
	score, raw float64
}

func newIndex(entries []*entry) *index {
	ix := &index{docs: make([]document, len(entries)), df: map[string]int{}}
	total := 0
	for i, e := range entries {
		d := document{tf: map[string]int{}, id: strings.ToLower(e.ID)}
		for _, t := range terms(e.ID) {
			d.tf[t] += idWeight
			d.length += idWeight
		}
		for _, t := range terms(e.Description) {
			d.tf[t]++
			d.length++
		}
		for t := range d.tf {
			ix.df[t]++
		}
		total += d.length
		ix.docs[i] = d
	}
	if len(entries) > 0 {
		ix.avgdl = float64(total) / float64(len(entries))
	}
	return ix
}

// idf is the inverse document frequency of a term (always positive; highest for a term
// no document has).
func (ix *index) idf(t string) float64 {
	n, df := float64(len(ix.docs)), float64(ix.df[t])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// search ranks the documents allowed (nil: all) against query and returns those scoring
// at least threshold, best first, at most topK (0: no limit).
//
// A document's score is the share of the query it matches: the sum over the distinct
// query terms of idf(term) × min(1, tf part), divided by the sum of idf(term), where the tf
// part is BM25's saturated term frequency (1 for a term that occurs once in a document of
// average length). A document whose id equals the query (ignoring case) scores 1.
// Documents that match no term are left out. Ties are broken by the raw BM25 score, then
// by id, so the order is deterministic.
func (ix *index) search(query string, allowed func(int) bool, topK int, threshold float64) []hit {
	q := distinct(terms(query))
	exact := strings.ToLower(strings.TrimSpace(query))
	if len(q) == 0 && exact == "" {
		return nil
	}
	weights := make([]float64, len(q))
	sum := 0.0
	for i, t := range q {
		weights[i] = ix.idf(t)
		sum += weights[i]
	}
	var hits []hit
	for i := range ix.docs {
		if allowed != nil && !allowed(i) {
			continue
		}
		h := ix.score(i, q, weights, sum)
		if ix.docs[i].id == exact {
			h.score = 1
		}
		if h.raw > 0 || h.score == 1 {
			if h.score >= threshold {
				hits = append(hits, h)
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		switch {
		case a.score != b.score:
			return cmpDesc(a.score, b.score)
		case a.raw != b.raw:
			return cmpDesc(a.raw, b.raw)
		default:
			return strings.Compare(ix.docs[a.doc].id, ix.docs[b.doc].id)
		}
	})
	if topK > 0 && len(hits) > topK {
		hits = hits[:topK]
	}
	return hits
}

// score computes one document's hit for the query terms q with their idf weights.
func (ix *index) score(i int, q []string, weights []float64, sum float64) hit {
	d := &ix.docs[i]
	h := hit{doc: i}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(d.length)/max(ix.avgdl, 1))
	matched := 0.0
	for k, t := range q {
		tf := float64(d.tf[t])
		if tf == 0 {
			continue
		}
		part := tf * (bm25K1 + 1) / (tf + norm)
		h.raw += weights[k] * part
		matched += weights[k] * min(1, part)
	}
	if sum > 0 {
		h.score = matched / sum
	}
	return h
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

// terms splits text into search terms: runs of letters and digits, split again where
// camelCase changes case ("getData" → get, data; "HTTPServer" → http, server), lower-cased,
// plural endings removed, common English words dropped.
func terms(text string) []string {
	var out []string
	for _, word := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		for _, part := range splitCamel(word) {
			if t := strings.ToLower(part); !stopWords[t] {
				out = append(out, stem(t))
			}
		}
	}
	return out
}

// splitCamel splits a word at lower→upper changes and before the last capital of a run of
// capitals followed by a lower-case letter.
func splitCamel(word string) []string {
	rs := []rune(word)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
		acronymEnd := i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	return append(parts, string(rs[start:]))
}

// stem removes English plural endings: -ies → -y, -sses → -ss, -es after s, x, z, ch, sh
// or o, and a final -s not after s.
func stem(t string) string {
	switch {
	case len(t) <= 3:
		return t
	case strings.HasSuffix(t, "ies"):
		return t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "sses"):
		return t[:len(t)-2]
	case strings.HasSuffix(t, "es") && hasAnySuffix(t[:len(t)-2], "s", "x", "z", "ch", "sh", "o"):
		return t[:len(t)-2]
	case strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "ss"):
		return t[:len(t)-1]
	default:
		return t
	}
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

func distinct(ts []string) []string {
	seen := map[string]bool{}
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// stopWords are left out of documents and queries.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq("a an and are as at be by for from has have in into is it its of on or that the this to was were will with") {
		m[w] = true
	}
	return m
}()
