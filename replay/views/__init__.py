"""Views: a cassette's transcript as steps, and the HTML viewer.

Private: use what ``replay`` exports.
"""
