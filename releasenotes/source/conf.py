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
"""Sphinx configuration of the placement-quota release notes (reno).

Build with ``tox -e releasenotes``. openstackdocstheme is used when it is
installed; otherwise a stock Sphinx theme.
"""

import importlib.util

project = 'placement-quota Release Notes'
copyright = '2026, OpenStack Foundation'
author = 'OpenStack Foundation'

extensions = ['reno.sphinxext']
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
exclude_patterns = ['_build']
pygments_style = 'native'
# Release notes are not versioned by this file: reno reads them from git.
version = ''
release = ''

if importlib.util.find_spec('openstackdocstheme') is not None:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
    openstackdocs_repo_name = 'openstack/placement-quota'
    openstackdocs_use_storyboard = False
    openstackdocs_auto_name = False
    openstackdocs_pdf_link = False
else:
    html_theme = 'alabaster'
