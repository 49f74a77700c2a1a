package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
)

// BenchmarkMsgpackEndToEnd compares the same call through the gateway posted as
// MessagePack and as JSON (subtract on the built-in demo, HTTP/1.1, loopback). The figure
// of interest is MessagePack calls/s ÷ JSON calls/s: the cost of transcoding at the face.
func BenchmarkMsgpackEndToEnd(b *testing.B) {
	url := benchGateway(b)
	b.Run("json", func(b *testing.B) {
		benchPost(b, url, subtractBody, `"result":19`)
	})
	b.Run("msgpack", func(b *testing.B) {
		body, err := msgpack.FromJSON([]byte(subtractBody))
		if err != nil {
			b.Fatal(err)
		}
		want, err := msgpack.FromJSON([]byte(`{"jsonrpc":"2.0","result":19,"id":1}`))
		if err != nil {
			b.Fatal(err)
		}
		client := benchClient()
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := postMsgpackBench(client, url, body, want); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func postMsgpackBench(client *http.Client, url string, body, want []byte) error {
	resp, err := client.Post(url, msgpack.ContentType, bytes.NewReader(body))
	if err != nil {
		return err
	}
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if !bytes.Equal(out, want) {
		return fmt.Errorf("%w: %x", errUnexpected, out)
	}
	return nil
}
