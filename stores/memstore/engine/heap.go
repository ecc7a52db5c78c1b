package engine

// iheap is a binary heap whose elements know their position (through pos),
// so that any element can be removed or re-sorted in O(log n). Position -1
// means "not in this heap".
type iheap[T comparable] struct {
	a    []T
	less func(x, y T) bool
	pos  func(T) *int
}

func (h *iheap[T]) Len() int { return len(h.a) }

// Top returns the least element; the heap must not be empty.
func (h *iheap[T]) Top() T { return h.a[0] }

func (h *iheap[T]) Contains(x T) bool {
	i := *h.pos(x)
	return i >= 0 && i < len(h.a) && h.a[i] == x
}

func (h *iheap[T]) Push(x T) {
	*h.pos(x) = len(h.a)
	h.a = append(h.a, x)
	h.up(len(h.a) - 1)
}

func (h *iheap[T]) Pop() T {
	x := h.a[0]
	h.Remove(x)
	return x
}

func (h *iheap[T]) Remove(x T) {
	i := *h.pos(x)
	n := len(h.a) - 1
	if i != n {
		h.swap(i, n)
	}
	var zero T
	h.a[n] = zero
	h.a = h.a[:n]
	*h.pos(x) = -1
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
}

// Fix restores order after x's key changed.
func (h *iheap[T]) Fix(x T) {
	i := *h.pos(x)
	if !h.down(i) {
		h.up(i)
	}
}

// Reset empties the heap, marking every element as out of it.
func (h *iheap[T]) Reset() {
	for _, x := range h.a {
		*h.pos(x) = -1
	}
	clear(h.a)
	h.a = h.a[:0]
}

// Above calls fn for every element for which inside returns true, where
// inside must be monotone along the heap order: if it is false for an
// element, it is false for everything below that element. Cost is
// proportional to the number of elements visited. fn must not modify the
// heap.
func (h *iheap[T]) Above(inside func(T) bool, fn func(T)) {
	if len(h.a) == 0 {
		return
	}
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !inside(h.a[i]) {
			continue
		}
		fn(h.a[i])
		if l := 2*i + 1; l < len(h.a) {
			stack = append(stack, l)
		}
		if r := 2*i + 2; r < len(h.a) {
			stack = append(stack, r)
		}
	}
}

func (h *iheap[T]) swap(i, j int) {
	h.a[i], h.a[j] = h.a[j], h.a[i]
	*h.pos(h.a[i]) = i
	*h.pos(h.a[j]) = j
}

func (h *iheap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.a[j], h.a[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *iheap[T]) down(i0 int) bool {
	i, n := i0, len(h.a)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(h.a[r], h.a[j]) {
			j = r
		}
		if !h.less(h.a[j], h.a[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
