// Burst fidelity's count of transmissions held behind another stream's far larger burst
// (models/link/burst_holds.h; docs/architecture.md, "Burst fidelity").
#include <catch2/catch.hpp>

#include "models/link/burst_holds.h"

using p2psim::link::burst_holds;

TEST_CASE("burst holds: TLP by TLP nothing is counted", "[link][burst]") {
  burst_holds h;
  h.started(1, 1, 0, 0, 100, 100);
  h.started(2, 1, 50, 100, 200, 100);  // waited for stream 1's TLP: as it would TLP by TLP
  CHECK(h.count() == 0);
}

TEST_CASE("burst holds: waiting for a burst four times as large counts", "[link][burst]") {
  burst_holds h;
  h.started(1, 8, 0, 0, 800, 800);
  h.started(2, 1, 50, 800, 900, 100);  // ready during stream 1's 8-TLP burst
  CHECK(h.count() == 1);
  h.started(1, 8, 0, 900, 1700, 800);
  h.started(1, 1, 1000, 1700, 1800, 100);  // its own stream's burst: not counted
  CHECK(h.count() == 1);
  h.started(3, 2, 1750, 1800, 2000, 200);  // a burst of 2 behind one TLP: not held by a larger one
  CHECK(h.count() == 1);
}

TEST_CASE("burst holds: the burst on the wire when it became ready counts after a cut piece",
          "[link][burst]") {
  // Stream 1's 8-TLP burst is on the wire when stream 2's TLP becomes ready; the link then
  // cuts stream 1's next burst after one TLP to let it pass. Just before it went a piece of
  // one TLP, but the whole burst held it.
  burst_holds h;
  h.started(1, 8, 0, 0, 800, 800);
  h.started(1, 1, 0, 800, 900, 100);
  h.started(2, 1, 77, 900, 1000, 100);
  CHECK(h.count() == 1);
  // Ready only after that burst: held by one TLP, as TLP by TLP.
  h.started(1, 1, 0, 1000, 1100, 100);
  h.started(2, 1, 1050, 1100, 1200, 100);
  CHECK(h.count() == 1);
}

TEST_CASE("burst holds: a burst that trickled in holds what TLP by TLP goes in its gaps",
          "[link][burst]") {
  // Stream 1's 2-TLP burst takes 20 ps of symbols but holds the wire 600 ps: its second TLP
  // came in 580 ps after the first (a page walk each). Stream 2's TLP, ready meanwhile,
  // would have gone between them TLP by TLP.
  burst_holds h;
  h.started(1, 2, 0, 0, 600, 20);
  h.started(2, 1, 100, 600, 610, 10);
  CHECK(h.count() == 1);
  // A 2-TLP burst whose TLPs came back to back: held for one TLP more, as TLP by TLP.
  h.started(1, 2, 610, 610, 630, 20);
  h.started(2, 1, 615, 630, 640, 10);
  CHECK(h.count() == 1);
  // Its own stream's trickling burst: not counted.
  h.started(1, 2, 640, 640, 1240, 20);
  h.started(1, 1, 700, 1240, 1250, 10);
  CHECK(h.count() == 1);
}

TEST_CASE("burst holds: a burst of its own stream in another class counts", "[link][burst]") {
  // A root complex's proxied read request waits behind the completion burst of the same read
  // (one stream), which trickles in from a slower link: TLP by TLP the request, of another
  // class, goes between two completions.
  burst_holds h;
  const int completion = 2, non_posted = 1;
  h.started(4, 25, 0, 0, 2200, 500, completion);
  h.started(4, 25, 100, 2200, 2300, 100, non_posted);
  CHECK(h.count() == 1);
  h.started(4, 25, 2300, 2300, 4500, 500, completion);
  h.started(4, 1, 2400, 4500, 4600, 100, completion);  // its own class: in order either way
  CHECK(h.count() == 1);
}

TEST_CASE("burst holds: waiting for a small burst that ran ahead of its credits counts apart",
          "[link][burst]") {
  // Generated seed 699: a completion waits for another stream's 2-TLP write burst, which TLP
  // by TLP came in a TLP time apart as its switch freed room: it would have gone between them.
  burst_holds h;
  h.started(1, 2, 0, 0, 200, 200, 0, true);
  h.started(2, 1, 50, 200, 300, 100, 2);
  CHECK(h.count() == 0);
  CHECK(h.count_ran_ahead() == 1);
  // The same burst with all of its credits: as TLP by TLP within a TLP, nothing counted.
  h.started(1, 2, 300, 300, 500, 200, 0, false);
  h.started(2, 1, 350, 500, 600, 100, 2);
  CHECK(h.count_ran_ahead() == 1);
  // Its own stream and class behind it: TLP by TLP it would have waited all the same.
  h.started(1, 2, 600, 600, 800, 200, 0, true);
  h.started(1, 1, 650, 800, 900, 100, 0);
  CHECK(h.count_ran_ahead() == 1);
  // A burst at least four times as large counts as held, whether or not it ran ahead.
  h.started(1, 8, 900, 900, 1700, 800, 0, true);
  h.started(2, 1, 950, 1700, 1800, 100, 2);
  CHECK(h.count() == 1);
  CHECK(h.count_ran_ahead() == 1);
}
