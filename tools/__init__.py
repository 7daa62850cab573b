"""The instruments of the loop: one module or small package per tool, free of any front end."""
