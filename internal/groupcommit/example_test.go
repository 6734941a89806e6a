package groupcommit_test

import (
	"fmt"
	"sync"

	"github.com/agentprotocols/go-sdk/internal/groupcommit"
)

// An append whose durable commit is costly: appends that arrive while one
// commits share the next commit.
func ExampleQueue() {
	type appendOp struct {
		record string
		err    error
	}
	var q groupcommit.Queue[*appendOp]
	var mu sync.Mutex
	var log []string
	commit := func(group []*appendOp) {
		mu.Lock()
		defer mu.Unlock()
		for _, op := range group {
			log = append(log, op.record) // one transaction for the group
		}
	}
	op := &appendOp{record: "r1"}
	q.Do(op, func(_, _ *appendOp, n int) bool { return n < 64 }, commit)
	fmt.Println(log, op.err)
	// Output: [r1] <nil>
}
