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
"""Sphinx configuration of the placement-quota API reference (os-api-ref:
``pip install -r doc/requirements.txt``).

    sphinx-build -W -b html api-ref/source api-ref/build/html

openstackdocstheme is used when it is installed; otherwise the build falls
back to a stock Sphinx theme, as doc/source/conf.py does, so
``sphinx-build -W`` passes either way.
"""

import importlib.util

project = 'placement-quota API reference'
copyright = '2026, OpenStack Foundation'
author = 'OpenStack Foundation'

extensions = ['os_api_ref']
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['samples']
pygments_style = 'native'

if importlib.util.find_spec('openstackdocstheme') is not None:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
    html_theme_options = {'sidebar_mode': 'toc'}
    openstackdocs_repo_name = 'openstack/placement-quota'
    openstackdocs_use_storyboard = False
    openstackdocs_auto_name = False
    openstackdocs_pdf_link = False
else:
    html_theme = 'alabaster'
