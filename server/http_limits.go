package server

// httpHeaderSlop is what net/http reads beyond http.Server.MaxHeaderBytes before it
// refuses a request's header with 431 (its "bufio slop").
const httpHeaderSlop = 4096

// httpMaxHeaderBytes is the http.Server.MaxHeaderBytes that makes n
// (server.boundary.max_header_bytes) the exact limit of a request's header — its request
// line, header lines and the blank line ending them: n bytes pass, n+1 are refused with
// 431. n is at least MinMaxHeaderBytes (validated).
func httpMaxHeaderBytes(n int) int { return max(n-httpHeaderSlop, 1) }
