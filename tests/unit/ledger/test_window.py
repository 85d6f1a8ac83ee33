# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Peaks over time windows: overlapping, adjacent and nested leases."""

import datetime

import testtools

from placement_quota.ledger import window


def at(hour, day=1):
    return datetime.datetime(2026, 5, day, hour)


def held(start, end, **amounts):
    return window.Interval(at(start), at(end), amounts)


class TestPeaks(testtools.TestCase):

    def test_overlapping_leases_add_up_where_they_overlap(self):
        found = window.peaks([held(0, 10, hosts=2), held(5, 15, hosts=3)],
                             at(0), at(20))
        self.assertEqual(window.Peak('hosts', 5, at(5), at(10)),
                         found['hosts'])

    def test_adjacent_leases_never_overlap(self):
        found = window.peaks([held(0, 10, hosts=2), held(10, 20, hosts=3)],
                             at(0), at(20))
        self.assertEqual(window.Peak('hosts', 3, at(10), at(20)),
                         found['hosts'])

    def test_nested_lease_peaks_inside_its_container(self):
        found = window.peaks([held(0, 20, hosts=1), held(5, 8, hosts=4)],
                             at(0), at(20))
        self.assertEqual(window.Peak('hosts', 5, at(5), at(8)),
                         found['hosts'])

    def test_intervals_outside_the_window_are_ignored(self):
        found = window.peaks([held(0, 5, hosts=7), held(15, 20, hosts=9)],
                             at(5), at(15), ['hosts'])
        self.assertEqual(window.Peak('hosts', 0), found['hosts'])

    def test_interval_ending_at_window_start_does_not_count(self):
        found = window.peaks([held(0, 5, hosts=7)], at(5), at(6))
        self.assertEqual({}, found)

    def test_peak_is_clipped_to_the_window(self):
        found = window.peaks([held(0, 20, hosts=2)], at(5), at(10))
        self.assertEqual(window.Peak('hosts', 2, at(5), at(10)),
                         found['hosts'])

    def test_each_resource_has_its_own_peak_moment(self):
        found = window.peaks([held(0, 4, hosts=3, instances=1),
                              held(6, 9, instances=5)], at(0), at(10))
        self.assertEqual((3, at(0)), (found['hosts'].amount,
                                      found['hosts'].at))
        self.assertEqual((5, at(6)), (found['instances'].amount,
                                      found['instances'].at))

    def test_asked_resources_are_reported_even_when_none_is_held(self):
        found = window.peaks([], at(0), at(1), ['hosts', 'instances'])
        self.assertEqual({'hosts': window.Peak('hosts', 0),
                          'instances': window.Peak('instances', 0)}, found)

    def test_first_of_equal_peaks_is_reported(self):
        found = window.peaks([held(0, 2, hosts=2), held(4, 6, hosts=2)],
                             at(0), at(10))
        self.assertEqual(window.Peak('hosts', 2, at(0), at(2)),
                         found['hosts'])

    def test_peak_equals_brute_force_maximum(self):
        import random
        rng = random.Random(7)
        intervals = []
        for _ in range(200):
            start = rng.randrange(0, 96)
            intervals.append(window.Interval(
                at(0) + datetime.timedelta(hours=start),
                at(0) + datetime.timedelta(hours=start + rng.randrange(1, 30)),
                {'hosts': rng.randrange(1, 5)}))
        start, end = at(0, day=2), at(0, day=4)
        brute = 0
        moment = start
        while moment < end:
            brute = max(brute, sum(
                i.amounts['hosts'] for i in intervals
                if i.start <= moment < i.end))
            moment += datetime.timedelta(hours=1)
        self.assertEqual(brute, window.peaks(intervals, start, end,
                                             ['hosts'])['hosts'].amount)


class TestHeadroom(testtools.TestCase):

    def test_fits_exactly_at_the_limit(self):
        self.assertTrue(window.headroom(8, 2, 10))

    def test_one_over_the_limit_does_not_fit(self):
        self.assertFalse(window.headroom(9, 2, 10))

    def test_unlimited_always_fits(self):
        self.assertTrue(window.headroom(10 ** 9, 1, -1))
