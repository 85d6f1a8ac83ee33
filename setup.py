import setuptools

setuptools.setup(setup_requires=['pbr>=5.8.0'], pbr=True)
