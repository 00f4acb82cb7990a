package servers

import (
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/wsplan/wsplan/frameworks"
)

// httpServer is a net/http server on several listeners, shared by the
// adapters that upgrade on net/http (gorilla, gobwas, gws_std, nhooyr,
// quickws). Upgraded connections are hijacked, so net/http no longer
// tracks them; handlers register them with conns.
type httpServer struct {
	srv   *http.Server
	lns   []net.Listener
	conns tracker
	wg    sync.WaitGroup // one per Serve goroutine
}

// startHTTP opens cfg.Addrs and serves handler on cfg.Path; any other path
// gets 404. handler receives the server so it can register connections.
func startHTTP(cfg frameworks.Config, handler func(s *httpServer, w http.ResponseWriter, r *http.Request)) (*httpServer, error) {
	lns, err := listenCfg(cfg)
	if err != nil {
		return nil, err
	}
	s := &httpServer{lns: lns}
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, func(w http.ResponseWriter, r *http.Request) { handler(s, w, r) })
	s.srv = &http.Server{Handler: mux}
	serveEach(lns, &s.wg, s.srv.Serve) // Serve returns http.ErrServerClosed after Close
	return s, nil
}

// Close closes the listeners, the connections still in HTTP and the
// upgraded ones, and waits for every goroutine the server started.
func (s *httpServer) Close() error {
	err := s.srv.Close()
	closeListeners(s.lns) // in case a Serve goroutine has not started yet
	s.conns.closeAll()
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
