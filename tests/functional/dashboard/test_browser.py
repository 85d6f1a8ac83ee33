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
"""The panel in a real headless browser (Debian's Chromium, driven by
Selenium): log in on Horizon's login page, open the panel from the
Reservations group, check its numbers against the API's, and save a
screenshot.

The screenshot goes to the test's temp dir (attached to the result as
``screenshot``); with ``PQ_UPDATE_DOC_IMAGES=1`` in the environment it
also replaces the documentation's ``doc/source/images/self-service-panel.png``.
"""

import os

import fixtures
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support import ui
from testtools import content

from tests.fixtures import browser as browser_fixture
from tests.fixtures import horizon
from tests.functional.dashboard import base

DOC_IMAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), 'doc', 'source', 'images',
    'self-service-panel.png')
WAIT = 60


class TestPanelInBrowser(base.DashboardTestCase):

    def setUp(self):
        super().setUp()
        reason = browser_fixture.missing()
        if reason:
            self.skipTest(reason)
        self.browser = browser_fixture.get_browser()
        self.driver = self.browser.fresh()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.addOnException(self._browser_details)
        self.give_credits(100.0, base.minute(-base.hours(24)),
                          base.minute(base.hours(24 * 60)))
        self.lease_id = self.create_lease(
            'training-run', base.minute(base.hours(1)),
            base.minute(base.hours(6)), hosts=2)
        self.create_lease('nightly-benchmark', base.minute(base.hours(30)),
                          base.minute(base.hours(40)), hosts=1)
        # Ended before it started: charged, then refunded in full.
        self.end_lease(self.create_lease(
            'cancelled-demo', base.minute(base.hours(50)),
            base.minute(base.hours(53)), hosts=2))

    def _browser_details(self, exc_info):
        try:
            path = os.path.join(self.tmp, 'failure.png')
            self.driver.save_screenshot(path)
            self.addDetail('failure-page', content.text_content(
                self.driver.current_url + '\n' +
                self.driver.page_source[-5000:]))
        except Exception:
            pass
        self.addDetail('chromedriver-log', content.text_content(
            self.browser.log_tail()))

    def wait(self, condition):
        return ui.WebDriverWait(self.driver, WAIT).until(condition)

    def test_log_in_open_the_panel_check_the_numbers(self):
        driver = self.driver
        driver.get(self.site.url + base.LOGIN)
        self.wait(expected_conditions.visibility_of_element_located(
            (By.ID, 'id_username'))).send_keys(self.user.name)
        driver.find_element(By.ID, 'id_password').send_keys(
            self.user.password)
        driver.find_element(By.ID, 'loginBtn').click()
        # In the sidebar: Project > Reservations > Quota and Credits.
        link = self.wait(expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, '#sidebar a[href="%s"]' % base.PANEL)))
        self.assertEqual('Quota and Credits',
                         link.get_attribute('textContent').strip())
        driver.get(self.site.url + base.PANEL)
        table = self.wait(expected_conditions.visibility_of_element_located(
            (By.ID, 'limits')))

        view = self.api('GET', 'limits')
        lease_count = [x for x in view['limits']
                       if x['filter'] == 'LeaseCountFilter'][0]
        self.assertEqual(2, lease_count['in_use'])
        tr = table.find_element(
            By.CSS_SELECTOR, 'tr[data-filter="LeaseCountFilter"]')
        self.assertEqual(str(horizon.MAX_LEASES), tr.find_element(
            By.CLASS_NAME, 'limit-limit').text)
        self.assertEqual('2', tr.find_element(
            By.CLASS_NAME, 'limit-in-use').text)
        self.assertEqual('%.2f' % view['credits']['balance'],
                         driver.find_element(
                             By.CLASS_NAME, 'credits-balance').text)
        leases = {x['lease_id']: x for x in self.api('GET', 'leases')[
            'leases']}
        charged = driver.find_element(
            By.CSS_SELECTOR,
            'tr[data-lease-id="%s"] .lease-charged' % self.lease_id).text
        self.assertEqual('%.2f' % leases[self.lease_id]['charged'], charged)
        # Horizon's script drew the limit summary's pie charts.
        self.wait(lambda d: d.find_elements(
            By.CSS_SELECTOR, '.pie-chart-usage svg'))
        self.wait(lambda d: d.find_element(
            By.CSS_SELECTOR, 'figure[data-resource="hosts"] path.usage-line'))

        # The whole page in one picture: the viewport as tall as the page
        # (Chromium's own screenshot of the viewport cannot be taller than
        # its window).
        height = driver.execute_script(
            'return Math.max(document.documentElement.scrollHeight, '
            'document.body.scrollHeight)')
        driver.execute_cdp_cmd('Emulation.setDeviceMetricsOverride', {
            'width': browser_fixture.WINDOW[0], 'height': min(height, 4000),
            'deviceScaleFactor': 1, 'mobile': False})
        self.addCleanup(driver.execute_cdp_cmd,
                        'Emulation.clearDeviceMetricsOverride', {})
        path = os.path.join(self.tmp, 'self-service-panel.png')
        self.assertTrue(driver.save_screenshot(path))
        with open(path, 'rb') as f:
            png = f.read()
        self.assertEqual(b'\x89PNG', png[:4])
        self.addDetail('screenshot', content.Content(
            content.ContentType('image', 'png'), lambda: [png]))
        if os.environ.get('PQ_UPDATE_DOC_IMAGES') == '1':
            os.makedirs(os.path.dirname(DOC_IMAGE), exist_ok=True)
            with open(DOC_IMAGE, 'wb') as f:
                f.write(png)
