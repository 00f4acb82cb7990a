package client

// TimerHeap is a min-heap of wake-ups (loop clock ns) for the items of a
// run (users, connections), by index. It is typed, not container/heap:
// heap.Push takes an `any`, an allocation per timer on the hot path.
// An item whose wake-up changed keeps its old entries; each entry carries
// the item's generation at push time, and the run skips entries of an
// older generation when they come due (lazy deletion).
type TimerHeap []Timer

type Timer struct {
	At  int64
	ID  int32
	Gen uint32
}

// Push adds a wake-up.
func (h *TimerHeap) Push(t Timer) {
	*h = append(*h, t)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].At <= s[i].At {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// Next returns the earliest wake-up's time, or -1 when there is none.
func (h TimerHeap) Next() int64 {
	if len(h) == 0 {
		return -1
	}
	return h[0].At
}

// Pop removes and returns the earliest wake-up.
func (h *TimerHeap) Pop() Timer {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s[l].At < s[m].At {
			m = l
		}
		if r < n && s[r].At < s[m].At {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
