package faces

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

// FuzzReadBody: ReadBody returns the body whole when it fits the limit and ErrBodyTooLarge
// when it does not, whatever Content-Length claims (absent, short, long) and however the body
// is read (one byte at a time or all at once); what it allocates stays within about twice the
// limit: a body past the limit is never read to its end.
func FuzzReadBody(f *testing.F) {
	for i, b := range fuzzseed.Frames(f, append(fuzzseed.Requests, fuzzseed.SessionRequest)...) {
		f.Add(b, uint16(len(b)), int64(len(b)), i%2 == 0)
		f.Add(b, uint16(len(b)/2), int64(-1), i%2 != 0)
		f.Add(b, uint16(len(b)+1), int64(len(b)/2), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, limit uint16, declared int64, oneByte bool) {
		var r io.Reader = bytes.NewReader(body)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		req := &http.Request{Body: io.NopCloser(r), ContentLength: declared, Header: http.Header{}}
		lim := int64(limit)
		got, err := ReadBody(req, lim, nil)
		switch {
		case declared > lim || int64(len(body)) > lim:
			if !errors.Is(err, ErrBodyTooLarge) || len(got) != 0 {
				t.Fatalf("ReadBody(%d bytes, limit %d, Content-Length %d) = %d bytes, %v; want ErrBodyTooLarge", len(body), lim, declared, len(got), err)
			}
		case err != nil || !bytes.Equal(got, body):
			t.Fatalf("ReadBody(%d bytes, limit %d, Content-Length %d) = %q, %v", len(body), lim, declared, got, err)
		}
		if c := int64(cap(got)); c > 2*(lim+1)+1024 {
			t.Fatalf("ReadBody(limit %d, Content-Length %d) allocated %d bytes", lim, declared, c)
		}
	})
}

// FuzzParseDeadlineHeader: X-Deadline-Ms is absent (0) or a positive integer of milliseconds.
func FuzzParseDeadlineHeader(f *testing.F) {
	for _, v := range fuzzseed.Find(f, "deadline_ms", fuzzseed.JSONRPCRequest) {
		f.Add(string(v))
	}
	for _, s := range []string{"", "0", "-1", "1", "+5", "9223372036854775808", "1e3", " 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ms, ok := ParseDeadlineHeader(v)
		if !ok {
			return
		}
		if v == "" {
			if ms != 0 {
				t.Fatalf("an absent header gave %d", ms)
			}
			return
		}
		if back, err := strconv.ParseInt(v, 10, 64); ms <= 0 || err != nil || back != ms {
			t.Fatalf("ParseDeadlineHeader(%q) = %d, ok", v, ms)
		}
	})
}
