package nekte

import (
	"math"
	"sync"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// cl100kFile is the offline table of cl100k_base merge ranks in tiktoken-go-loader, so
// that nothing is fetched over the network.
const cl100kFile = "cl100k_base.tiktoken"

// loadTokenizer loads the cl100k_base ranks once, on first use (it takes about a tenth
// of a second and some tens of megabytes).
var loadTokenizer = sync.OnceValues(func() (*bpe, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(cl100kFile)
	if err != nil {
		return nil, err
	}
	b := &bpe{ranks: ranks}
	for tok := range ranks {
		b.maxToken = max(b.maxToken, len(tok))
	}
	return b, nil
})

// Tokens returns how many tokens text is in OpenAI's cl100k_base byte-pair encoding,
// exactly as tiktoken counts them (special-token markers such as "<|endoftext|>" count as
// ordinary text). The ranks are compiled into the binary and loaded lazily on first
// call; Tokens is safe for concurrent use. Should the ranks fail to load, Tokens falls
// back to the NEKTE reference's estimate, ceil(len(text)/4).
func Tokens(text []byte) int {
	b, err := loadTokenizer()
	if err != nil {
		return (len(text) + 3) / 4
	}
	return b.count(text)
}

// mayFit reports whether text could fit in limit tokens: false when it is longer than
// limit of the longest tokens, so that Resolve need not tokenize a large text that
// cannot fit.
func mayFit(text []byte, limit int) bool { return len(text) <= fitBound(limit) }

// fitBound returns the length in bytes past which a text cannot be limit tokens or fewer
// (every token stands for at most the bytes of the longest one).
func fitBound(limit int) int {
	b, err := loadTokenizer()
	if err != nil || limit > math.MaxInt/b.maxToken {
		return math.MaxInt
	}
	return limit * b.maxToken
}

// tokenEnds returns the end offsets in text of its first limit tokens (of all of them
// when there are fewer), or nil when the ranks failed to load.
func tokenEnds(text []byte, limit int) []int {
	b, err := loadTokenizer()
	if err != nil {
		return nil
	}
	var ends []int
	b.walk(text, func(end int) bool {
		ends = append(ends, end)
		return len(ends) < limit
	})
	return ends
}
