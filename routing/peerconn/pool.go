// Package peerconn holds the gRPC connections a replica keeps to other replicas' internal
// listeners: one per replica address, opened lazily, at most MaxConns of them (the least
// recently used is closed past it), TLS with the listener's own configuration or
// plaintext, messages bounded each way. The NEKTE peer client (faces/grpc) and the agent
// link's forwarding (routing/agentlink) share it.
package peerconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// MaxConns bounds the connections a Pool keeps open; past it the least recently used is
// closed (calls in flight on it fail: their replica counts as gone).
const MaxConns = 64

// ErrClosed answers Conn after Close.
var ErrClosed = errors.New("the peer connections are closed")

// Pool is the connections to other replicas, one per address. It is safe for concurrent
// use.
type Pool struct {
	maxBytes int
	creds    grpccreds.TransportCredentials

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	order  []string // addresses, least recently used first
	closed bool
}

// New returns a pool dialling with conf (nil: plaintext), messages at most maxBytes each
// way.
func New(maxBytes int, conf *tls.Config) *Pool {
	creds := insecure.NewCredentials()
	if conf != nil {
		creds = grpccreds.NewTLS(conf)
	}
	return &Pool{maxBytes: maxBytes, creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// Conn returns the connection to addr, opening it (lazily: grpc connects on the first
// call) when there is none, and closing the least recently used past MaxConns.
func (p *Pool) Conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if cc, ok := p.conns[addr]; ok {
		p.touch(addr)
		return cc, nil
	}
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(p.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(p.maxBytes), grpc.MaxCallSendMsgSize(p.maxBytes)))
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	if len(p.order) >= MaxConns {
		oldest := p.order[0]
		p.order = p.order[1:]
		_ = p.conns[oldest].Close()
		delete(p.conns, oldest)
	}
	p.conns[addr] = cc
	p.order = append(p.order, addr)
	return cc, nil
}

// touch moves addr to the most recently used end of order. Under mu.
func (p *Pool) touch(addr string) {
	for i, a := range p.order {
		if a == addr {
			p.order = append(append(p.order[:i:i], p.order[i+1:]...), addr)
			return
		}
	}
}

// Close closes every connection; later calls of Conn fail with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, cc := range p.conns {
		errs = append(errs, cc.Close())
	}
	p.conns, p.order = nil, nil
	return errors.Join(errs...)
}
