package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRoundRobin: requests alternate between the backends, the Host
// header is passed through, and a streamed answer reaches the client
// before the backend has finished it.
func TestRoundRobin(t *testing.T) {
	release := make(chan struct{})
	backend := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s\n", name, r.Host)
			if r.URL.Path == "/stream" {
				w.(http.Flusher).Flush()
				<-release
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	proxy, err := newProxy([]string{backend("a"), backend("b")})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	var got []string
	for range 4 {
		resp, err := http.Get(front.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, string(b))
	}
	host := front.Listener.Addr().String()
	want := []string{"a " + host + "\n", "b " + host + "\n", "a " + host + "\n", "b " + host + "\n"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("answers %q, want %q", got, want)
	}

	resp, err := http.Get(front.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n') // before release: only a streamed answer arrives
	close(release)
	if err != nil || line != "a "+host+"\n" {
		t.Fatalf("streamed line %q, %v", line, err)
	}
}

// TestUsage: a backend that is not an http:// URL and a non-loopback
// address are usage errors.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"ftp://x"}, {"--addr", "0.0.0.0:8800", "http://127.0.0.1:1"}, {"--bogus"}} {
		if code := run(t.Context(), args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
