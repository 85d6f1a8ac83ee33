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
"""How tools/bench/enforcement.py sums up its rounds and splits the
chain's extra CPU."""

import testtools

from tools.bench import enforcement as bench


def run(cpu, rps=1000.0, errors=0):
    return {'requests': int(rps * 5), 'errors': errors, 'rps': rps,
            'p50_ms': 1.0, 'p99_ms': 2.0, 'server_cpu_us': cpu}


class TestRounds(testtools.TestCase):

    def test_each_figure_is_its_median_over_the_rounds(self):
        merged = bench.median_run([run(200.0, rps=900.0), run(170.0),
                                   run(400.0, rps=5000.0)])
        self.assertEqual(200.0, merged['server_cpu_us'])
        self.assertEqual(1000.0, merged['rps'])

    def test_errors_are_summed_over_the_rounds(self):
        merged = bench.median_run([run(1.0, errors=1), run(1.0),
                                   run(1.0, errors=2)])
        self.assertEqual(3, merged['errors'])

    def test_a_round_ratio_is_against_that_rounds_ceiling(self):
        round_ = dict(zip(bench.PATHS, (run(160.0), run(200.0),
                                        run(240.0))))
        self.assertEqual(1.5, bench.cpu_ratio(round_, bench.PATHS[2]))
        self.assertEqual(1.25, bench.cpu_ratio(round_, bench.PATHS[1]))


class TestCpuSplit(testtools.TestCase):

    def test_parsing_is_the_floor_over_the_ceiling(self):
        (label, parsing), _ = bench.cpu_split(run(170.0), run(220.0),
                                              run(265.0))
        self.assertIn('parsing', label)
        self.assertEqual(50.0, parsing)

    def test_what_follows_parsing_is_the_chain_over_the_floor(self):
        _, (label, after) = bench.cpu_split(run(170.0), run(220.0),
                                            run(265.0))
        self.assertIn('after parsing', label)
        self.assertEqual(45.0, after)
