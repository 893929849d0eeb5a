package core

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	policyv1alpha1 "github.com/lifeboat-dev/lifeboat/api/policy/v1alpha1"
	st "github.com/lifeboat-dev/lifeboat/internal/scheduler/schedtesting"
)

// websterSeatBySeat is webster without websterFloor: every seat handed out
// one by one. It is the reference webster must match.
func websterSeatBySeat(parties []party, seats int32, descTies bool) map[string]int32 {
	out := make(map[string]int32, len(parties))
	if len(parties) == 0 {
		return out
	}
	for range seats {
		best := -1
		for i, p := range parties {
			if best < 0 || websterBefore(p, out[p.name], parties[best], out[parties[best].name], descTies) {
				best = i
			}
		}
		out[parties[best].name]++
	}
	return out
}

// webster gives every party the seats it gets when they are handed out one
// by one: small and huge votes, ties, parties without votes, fewer seats
// than parties.
func TestWebsterMatchesSeatBySeat(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for it := 0; it < 5000; it++ {
		n := 1 + r.Intn(8)
		parties := make([]party, 0, n)
		for i := 0; i < n; i++ {
			v := int64(r.Intn(20))
			switch r.Intn(6) {
			case 0:
				v = r.Int63()
			case 1:
				v = math.MaxInt64 - int64(r.Intn(3))
			case 2:
				v = int64(r.Intn(3)) // ties and parties without votes
			}
			parties = append(parties, party{name: string(rune('a' + i)), votes: v})
		}
		seats := int32(r.Intn(3000))
		if r.Intn(4) == 0 {
			seats = int32(r.Intn(2 * n))
		}
		desc := r.Intn(2) == 0
		want, got := websterSeatBySeat(parties, seats, desc), webster(parties, seats, desc)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v, %d seats, descending ties %v: got %v, want %v", parties, seats, desc, got, want)
		}
	}
}

// finishes fails the test when f has not returned within a deadline far
// beyond what it needs: a division that hands out 2147483647 replicas one
// by one takes minutes.
func finishes(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running after 10s", what)
	}
}

func TestWebsterHugeReplicas(t *testing.T) {
	parties := []party{{"a", math.MaxInt64}, {"b", math.MaxInt64 - 1}, {"c", 1}, {"d", math.MaxInt32}, {"e", 0}}
	var got map[string]int32
	finishes(t, "webster of 2147483647 seats", func() { got = webster(parties, math.MaxInt32, false) })
	var sum int64
	for _, n := range got {
		sum += int64(n)
	}
	if sum != math.MaxInt32 || got["e"] != 0 || got["a"] < got["b"] || got["b"] < got["d"] {
		t.Errorf("seats %v: sum %d, want %d, none for e, in the order of the votes", got, sum, math.MaxInt32)
	}

	placements := map[string]*policyv1alpha1.Placement{
		"Divided":        st.MakePlacement().Divided().Obj(),
		"static weights": st.MakePlacement().StaticWeights(map[string]int64{"member1": 1, "member2": 3, "member3": math.MaxInt32}).Obj(),
		"dynamic weight": st.MakePlacement().DynamicWeight().Obj(),
	}
	for name, p := range placements {
		t.Run(name, func(t *testing.T) {
			b := st.MakeBinding("default", "nginx").Replicas(math.MaxInt32).Placement(p)
			var res Result
			var err error
			finishes(t, fmt.Sprintf("Schedule of %d replicas", math.MaxInt32), func() {
				res, err = Schedule(Problem{Spec: b.SpecObj(), Clusters: members(4)})
			})
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, c := range res.Clusters {
				sum += int64(c.Replicas)
			}
			if sum != math.MaxInt32 {
				t.Errorf("%v: %d replicas, want %d", res.Clusters, sum, math.MaxInt32)
			}
		})
	}
}
