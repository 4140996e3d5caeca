"""Per-document chunking: the chunk size and overlap chosen at upload (null: the platform defaults)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0010_verbose_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='chunk_size',
            field=models.PositiveIntegerField(blank=True, help_text='Longest chunk in characters (empty: the platform default)', null=True, verbose_name='chunk size'),
        ),
        migrations.AddField(
            model_name='document',
            name='chunk_overlap',
            field=models.PositiveIntegerField(blank=True, help_text='Characters repeated from the end of the previous chunk (empty: the platform default)', null=True, verbose_name='chunk overlap'),
        ),
    ]
