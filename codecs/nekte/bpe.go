package nekte

import (
	"math"
	"unicode"
	"unicode/utf8"
)

// bpe counts tokens of the cl100k_base encoding. It splits text into pieces exactly as
// tiktoken's pre-tokenizer pattern for cl100k_base does,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (alternatives tried in order at each position, as a backtracking matcher does; \s is
// unicode.IsSpace), and merges the bytes of each piece by rank as tiktoken does. It is a
// hand-written equivalent of tiktoken-go's encoder, which runs the pattern through a
// general backtracking regexp engine and is some twenty times slower; the tests check the
// two agree token for token.
type bpe struct {
	ranks    map[string]int
	maxToken int // length in bytes of the longest token
}

// walk calls fn with the end offset in text of each token, in order, until fn returns
// false. Invalid UTF-8 is read as U+FFFD, as tiktoken reads it, and offsets then refer to
// the repaired text.
func (b *bpe) walk(text []byte, fn func(end int) bool) {
	if !utf8.Valid(text) {
		text = []byte(string([]rune(string(text)))) // every invalid byte becomes U+FFFD
	}
	var parts []part
	for start := 0; start < len(text); {
		end := nextPiece(text, start)
		piece := text[start:end]
		if _, ok := b.ranks[string(piece)]; ok || len(piece) == 1 {
			if !fn(end) {
				return
			}
			start = end
			continue
		}
		parts = b.merge(piece, parts[:0])
		for k := 1; k < len(parts); k++ {
			if !fn(start + parts[k].start) {
				return
			}
		}
		start = end
	}
}

// count returns the number of tokens of text.
func (b *bpe) count(text []byte) int {
	n := 0
	b.walk(text, func(int) bool { n++; return true })
	return n
}

// part is a run of a piece's bytes that is one token so far, and the rank of the token
// it would make merged with the next part (math.MaxInt: none).
type part struct{ start, rank int }

// merge applies byte-pair merges to piece, lowest rank first (leftmost on ties), and
// returns the boundaries of its tokens: the starts of the parts, then len(piece).
func (b *bpe) merge(piece []byte, parts []part) []part {
	for i := range len(piece) + 1 {
		parts = append(parts, part{start: i, rank: math.MaxInt})
	}
	rankOf := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := b.ranks[string(piece[parts[i].start:parts[i+skip+2].start])]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := range len(parts) - 2 {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		minRank, i := math.MaxInt, -1
		for k := range len(parts) - 1 {
			if parts[k].rank < minRank {
				minRank, i = parts[k].rank, k
			}
		}
		if i < 0 {
			break
		}
		parts[i].rank = rankOf(i, 1)
		if i > 0 {
			parts[i-1].rank = rankOf(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return parts
}

// nextPiece returns the end of the piece that starts at i < len(s).
func nextPiece(s []byte, i int) int {
	r, n := utf8.DecodeRune(s[i:])
	next, nn := rune(-1), 0
	if i+n < len(s) {
		next, nn = utf8.DecodeRune(s[i+n:])
	}
	switch {
	case r == '\'' && contraction(s[i+n:]) > 0: // (?i:'s|'t|'re|'ve|'m|'ll|'d)
		return i + n + contraction(s[i+n:])
	case unicode.IsLetter(r): // [^\r\n\p{L}\p{N}]?\p{L}+, without the prefix
		return runEnd(s, i+n, unicode.IsLetter, -1)
	case r != '\r' && r != '\n' && !unicode.IsNumber(r) && unicode.IsLetter(next): // with it
		return runEnd(s, i+n+nn, unicode.IsLetter, -1)
	case unicode.IsNumber(r): // \p{N}{1,3}
		return runEnd(s, i+n, unicode.IsNumber, 2)
	case isOther(r): //  ?[^\s\p{L}\p{N}]+[\r\n]*, without the space
		return runEnd(s, runEnd(s, i+n, isOther, -1), isCRLF, -1)
	case r == ' ' && nn > 0 && isOther(next): // with it
		return runEnd(s, runEnd(s, i+n+nn, isOther, -1), isCRLF, -1)
	}
	// r is white space.
	end := runEnd(s, i, unicode.IsSpace, -1)
	last := i // start of the run's last character
	lastCRLF := -1
	for k := i; k < end; {
		c, size := utf8.DecodeRune(s[k:])
		if isCRLF(c) {
			lastCRLF = k
		}
		last = k
		k += size
	}
	switch {
	case lastCRLF >= 0: // \s*[\r\n]+
		return lastCRLF + 1
	case end == len(s): // \s+(?!\S) at the end of the text
		return end
	case last > i: // \s+(?!\S), leaving the last space to the next piece
		return last
	default: // \s+
		return end
	}
}

// contraction returns the length of the contraction suffix ('s, 're, …, without the
// apostrophe) at the start of s, compared case-insensitively, or 0.
func contraction(s []byte) int {
	r1, n1 := utf8.DecodeRune(s)
	switch unicode.ToLower(r1) {
	case 's', 't', 'm', 'd':
		return n1
	case 'r', 'v', 'l':
		want := 'e'
		if unicode.ToLower(r1) == 'l' {
			want = 'l'
		}
		if r2, n2 := utf8.DecodeRune(s[n1:]); n2 > 0 && unicode.ToLower(r2) == want {
			return n1 + n2
		}
	}
	return 0
}

// runEnd returns the end of the run of characters matching is that starts at i, taking
// at most limit of them (limit < 0: no limit).
func runEnd(s []byte, i int, is func(rune) bool, limit int) int {
	for i < len(s) && limit != 0 {
		r, n := utf8.DecodeRune(s[i:])
		if !is(r) {
			break
		}
		i += n
		limit--
	}
	return i
}

// isOther reports whether r is neither white space, a letter nor a number.
func isOther(r rune) bool { return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r) }

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }
