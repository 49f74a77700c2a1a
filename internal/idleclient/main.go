// Command idleclient opens n idle connections to a server and holds them until its standard
// input closes: WebSocket connections (-url ws://…) that answer the server's pings and
// send nothing else, or bare TCP connections (-tcp host:port) that send nothing at all. It
// prints "ready" once every connection is open. The gateway's idle-connection benchmark
// runs it as a separate process, so that the memory it measures is the server's alone.
//
//	go run ./internal/idleclient -url ws://127.0.0.1:8080/ws -n 10000 < /dev/tty
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	url := flag.String("url", "", "WebSocket URL to open the connections to")
	tcp := flag.String("tcp", "", "host:port to open bare TCP connections to (instead of -url)")
	n := flag.Int("n", 1000, "how many connections to open")
	parallel := flag.Int("parallel", 32, "how many connections to open at once")
	flag.Parse()
	if err := run(*url, *tcp, *n, *parallel, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "idleclient:", err)
		os.Exit(1)
	}
}

func run(url, tcp string, n, parallel int, stdin io.Reader, stdout io.Writer) error {
	if (url == "") == (tcp == "") {
		return errors.New("give one of -url and -tcp")
	}
	dial := func() (io.Closer, error) { return net.DialTimeout("tcp", tcp, 10*time.Second) }
	if url != "" {
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 256, WriteBufferSize: 256}
		dial = func() (io.Closer, error) {
			c, resp, err := d.Dial(url, nil)
			if err != nil {
				return nil, err
			}
			_ = resp.Body.Close()
			go func() { // reading answers the server's pings
				for {
					if _, _, err := c.NextReader(); err != nil {
						return
					}
				}
			}()
			return c, nil
		}
	}
	conns, err := open(n, max(parallel, 1), dial)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

// open opens n connections, parallel at a time; on the first failure it returns what it
// opened and the error.
func open(n, parallel int, dial func() (io.Closer, error)) ([]io.Closer, error) {
	var (
		mu    sync.Mutex
		conns = make([]io.Closer, 0, n)
		first error
		wg    sync.WaitGroup
	)
	next := make(chan struct{})
	for range parallel {
		wg.Go(func() {
			for range next {
				c, err := dial()
				mu.Lock()
				if err != nil {
					first = firstError(first, err)
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
			}
		})
	}
	for range n {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return conns, first
}

func firstError(first, err error) error {
	if first != nil {
		return first
	}
	return fmt.Errorf("connection failed: %w", err)
}
